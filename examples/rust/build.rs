// Links libhone.so from HONE_LIB_DIR (default: ../../build/lib, the README's build directory)
// and records that directory as the binary's run path, so `cargo run` needs no
// LD_LIBRARY_PATH.
use std::env;
use std::path::PathBuf;

fn main() {
    let dir = env::var("HONE_LIB_DIR").map(PathBuf::from).unwrap_or_else(|_| {
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../build/lib")
    });
    println!("cargo:rerun-if-env-changed=HONE_LIB_DIR");
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=hone");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}
