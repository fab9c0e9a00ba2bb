//! Field paths for errors inside internally tagged enums (the channel, its
//! path loss and trajectory, a flow's traffic). Serde reads such an enum's
//! fields from a buffered copy, so `serde_path_to_error` can name only the
//! enum (`ues.0.channel`), not the field that failed inside it. The path
//! is narrowed here by asking the deserializer again with one field or
//! element taken out (or, for a missing field, put in) and keeping the one
//! whose change alone changes the error; when no single one does, the
//! enum's path stays.

use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

pub(crate) fn dotted(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| match s {
            Step::Key(k) => k.clone(),
            Step::Index(i) => i.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// The tags of the scenario's internally tagged enums: never the field
/// at fault (without its tag an enum fails whatever else is wrong).
const TAGS: [&str; 2] = ["kind", "model"];

fn at<'a>(v: &'a mut Value, steps: &[Step]) -> Option<&'a mut Value> {
    steps.iter().try_fold(v, |v, s| match s {
        Step::Key(k) => v.get_mut(k.as_str()),
        Step::Index(i) => v.get_mut(*i),
    })
}

/// The error the whole scenario gives with `edit` applied to the node
/// at `steps`.
fn error_with(root: &Value, steps: &[Step], edit: impl FnOnce(&mut Value)) -> Option<(Vec<Step>, String)> {
    let mut v = root.clone();
    edit(at(&mut v, steps)?);
    super::config::typed(&v).err()
}

/// Most times the scenario is deserialized again for one error: each try
/// reads the whole document, so a long list (a CQI trace of 10^5 points)
/// stops the narrowing at the list instead of trying every element.
const MAX_TRIES: usize = 256;

pub(crate) fn narrow(root: &Value, mut steps: Vec<Step>, msg: &str) -> Vec<Step> {
    let original = (steps.clone(), msg.to_string());
    if let Some(field) = msg.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
        return narrow_missing(root, steps, field, &original);
    }
    let mut tries = 0;
    // At most as deep as the document.
    for _ in 0..64 {
        let Some(node) = at(&mut root.clone(), &steps).cloned() else {
            break;
        };
        let children: Vec<Step> = match &node {
            Value::Object(m) => m
                .keys()
                .filter(|k| !TAGS.contains(&k.as_str()))
                .map(|k| Step::Key(k.clone()))
                .collect(),
            Value::Array(a) => (0..a.len()).map(Step::Index).collect(),
            _ => break,
        };
        tries += children.len();
        if tries > MAX_TRIES {
            break;
        }
        let culprits: Vec<Step> = children
            .into_iter()
            .filter(|c| {
                let c = c.clone();
                error_with(root, &steps, move |n| match (n, &c) {
                    (Value::Object(m), Step::Key(k)) => {
                        m.remove(k);
                    }
                    (Value::Array(a), Step::Index(i)) => {
                        a.remove(*i);
                    }
                    _ => {}
                })
                .as_ref()
                    != Some(&original)
            })
            .collect();
        match culprits.as_slice() {
            [one] => steps.push(one.clone()),
            _ => break,
        }
    }
    steps
}

/// "missing field `f`": the one object under the reported node that
/// stops missing `f` when given it.
fn narrow_missing(root: &Value, steps: Vec<Step>, field: &str, original: &(Vec<Step>, String)) -> Vec<Step> {
    let Some(node) = at(&mut root.clone(), &steps).cloned() else {
        return steps;
    };
    let mut objects = Vec::new();
    collect_objects(&node, &mut Vec::new(), &mut objects);
    if objects.len() > MAX_TRIES {
        return steps;
    }
    let unknown = format!("unknown field `{field}`");
    let found: Vec<Vec<Step>> = objects
        .into_iter()
        .filter(|rel| !rel.is_empty())
        .filter(|rel| {
            let mut full = steps.clone();
            full.extend(rel.iter().cloned());
            match error_with(root, &full, |n| {
                if let Value::Object(m) = n {
                    m.insert(field.to_string(), Value::Null);
                }
            }) {
                None => true,
                Some(e) => &e != original && !e.1.starts_with(&unknown),
            }
        })
        .collect();
    match found.as_slice() {
        [rel] => steps.into_iter().chain(rel.iter().cloned()).collect(),
        _ => steps,
    }
}

fn collect_objects(v: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    if out.len() > MAX_TRIES {
        return;
    }
    match v {
        Value::Object(m) => {
            out.push(here.clone());
            for (k, c) in m {
                here.push(Step::Key(k.clone()));
                collect_objects(c, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                here.push(Step::Index(i));
                collect_objects(c, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}
