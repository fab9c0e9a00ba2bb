//! Compiles the BPF programs in `bpf/` with clang into OUT_DIR, where
//! `src/object.rs` embeds them. The headers of libbpf (bpf_helpers.h and the
//! rest) come from the libbpf that `libbpf-sys` builds (DEP_BPF_INCLUDE); the
//! kernel's UAPI headers (linux/bpf.h) from Debian's linux-libc-dev.
//!
//! Without clang the crate still builds: the objects are empty and loading
//! says why (`Error::BuiltWithoutClang`), so that the simulator, which does
//! not need clang, builds anywhere.

use std::path::PathBuf;
use std::process::Command;

const PROGRAMS: &[&str] = &["xrc", "shim", "placeholder"];

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let include = std::env::var("DEP_BPF_INCLUDE").expect("libbpf-sys gives its headers' directory");
    let clang = std::env::var("XRC_CLANG").unwrap_or_else(|_| "clang".into());
    println!("cargo:rerun-if-env-changed=XRC_CLANG");
    for f in std::fs::read_dir("bpf").unwrap() {
        println!("cargo:rerun-if-changed={}", f.unwrap().path().display());
    }
    let mut missing = None;
    for p in PROGRAMS {
        let obj = out.join(format!("{p}.bpf.o"));
        let run = Command::new(&clang)
            .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf", "-D__TARGET_ARCH_x86"])
            .arg(format!("-I{include}"))
            .args(["-idirafter", "/usr/include/x86_64-linux-gnu"])
            .arg("-c")
            .arg(format!("bpf/{p}.bpf.c"))
            .arg("-o")
            .arg(&obj)
            .output();
        match run {
            Ok(o) if o.status.success() => {}
            Ok(o) => panic!("clang failed on bpf/{p}.bpf.c:\n{}", String::from_utf8_lossy(&o.stderr)),
            Err(e) => {
                missing = Some(format!("{clang}: {e}"));
                std::fs::write(&obj, b"").unwrap();
            }
        }
    }
    let why = missing.unwrap_or_default();
    std::fs::write(out.join("clang_missing.txt"), why).unwrap();
}
