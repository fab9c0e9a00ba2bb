//! Tells the tests whether they are built without optimization, so that the
//! long property sweeps run a few cases there and all of them in the
//! optimized test profile (which checks the debug assertions and the
//! simulator's invariants as well: `release-test` in the workspace manifest).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(xrc_unoptimized)");
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("OPT_LEVEL").as_deref() == Ok("0") {
        println!("cargo::rustc-cfg=xrc_unoptimized");
    }
}
