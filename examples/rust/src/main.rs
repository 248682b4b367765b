//! hone from Rust: the C API (include/hone/hone.h) through a plain extern "C" block, no
//! external crates. Runs gemv.f32 through the dispatcher and checks it against a plain loop.
//!
//!   HONE_LIB_DIR=build/lib cargo run --manifest-path examples/rust/Cargo.toml
use std::ffi::CStr;
use std::os::raw::c_char;

const HONE_C_API_VERSION_MAJOR: i32 = 1;
const HONE_OK: i32 = 0;

extern "C" {
    fn hone_check_version(major: i32) -> i32;
    fn hone_version() -> *const c_char;
    fn hone_last_error() -> *const c_char;
    fn hone_gemv_f32(x: *const f32, w: *const f32, y: *mut f32, rows: i64, n: i64, k: i64)
        -> i32;
}

fn last_error() -> String {
    // SAFETY: hone_last_error never returns NULL; the string lives until the next hone call.
    unsafe { CStr::from_ptr(hone_last_error()) }.to_string_lossy().into_owned()
}

fn main() {
    // SAFETY: plain C calls; every buffer below outlives the call that reads it.
    if unsafe { hone_check_version(HONE_C_API_VERSION_MAJOR) } != HONE_OK {
        eprintln!("hone: {}", last_error());
        std::process::exit(1);
    }
    let version = unsafe { CStr::from_ptr(hone_version()) }.to_string_lossy();
    println!("hone {version}");

    let (rows, n, k) = (2usize, 64usize, 128usize);
    let x: Vec<f32> = (0..rows * k).map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5).collect();
    let w: Vec<f32> = (0..n * k).map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5).collect();
    let mut y = vec![0f32; rows * n];
    let status = unsafe {
        hone_gemv_f32(x.as_ptr(), w.as_ptr(), y.as_mut_ptr(), rows as i64, n as i64, k as i64)
    };
    if status != HONE_OK {
        eprintln!("hone_gemv_f32: {}", last_error());
        std::process::exit(1);
    }
    let mut max_error = 0f64;
    for r in 0..rows {
        for j in 0..n {
            let sum: f64 = (0..k).map(|i| x[r * k + i] as f64 * w[j * k + i] as f64).sum();
            max_error = max_error.max((sum - y[r * n + j] as f64).abs());
        }
    }
    let ok = max_error < 1e-3;
    println!(
        "gemv.f32 rows={rows} n={n} k={k}: max |error| {max_error:.3e} {}",
        if ok { "ok" } else { "FAILED" }
    );
    std::process::exit(if ok { 0 } else { 1 });
}
