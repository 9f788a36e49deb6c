//! Links the system libxml2, libxslt and libexslt (found with pkg-config) and
//! compiles the only C in the project: `csrc/shim.c` formats libxslt's
//! variadic error callbacks and reads struct fields, so no libxml2/libxslt
//! struct layout is mirrored in Rust, and defines a faster `xmlStrEqual`
//! and a once-per-process `xsltRegisterAllElement` that libxslt's calls
//! bind to; `csrc/dtd.c` lends parsed DTDs to
//! later parses (see `src/ffi/dtd.rs`); `csrc/html.c` serializes HTML
//! results as libxslt does, faster; `csrc/untrusted.c` parses a client's
//! document under limits (see `src/ffi/untrusted.rs`); `csrc/xpath_pool.c`
//! keeps each thread's XPath contexts from one transform to the next;
//! `csrc/sort.c` sorts as browsers do for `xsl-sort = "unicode"`
//! (comparing through `src/ffi/collate.rs`).
//!
//! `AXLE_CSRC_SANITIZE=address` compiles that C with `-fsanitize=address`
//! (scripts/fuzz-asan sets it, with the Rust code built under
//! `-Zsanitizer=address`), so AddressSanitizer checks its heap accesses
//! too; the system libxml2 and libxslt stay uninstrumented.

fn main() {
    let libs = ["libxslt", "libexslt", "libxml-2.0"];
    let mut build = cc::Build::new();
    build
        .file("csrc/shim.c")
        .file("csrc/dtd.c")
        .file("csrc/xinclude.c")
        .file("csrc/html.c")
        .file("csrc/untrusted.c")
        .file("csrc/xpath_pool.c")
        .file("csrc/sort.c")
        .warnings(true);
    println!("cargo:rerun-if-env-changed=AXLE_CSRC_SANITIZE");
    match std::env::var("AXLE_CSRC_SANITIZE").as_deref() {
        Ok("address") => {
            build
                .flag("-fsanitize=address")
                .flag("-fno-omit-frame-pointer")
                .flag("-g");
        }
        Ok("") | Err(_) => {}
        Ok(other) => panic!("AXLE_CSRC_SANITIZE={other}: only `address` is supported"),
    }
    for name in libs {
        let lib = match pkg_config::Config::new().probe(name) {
            Ok(lib) => lib,
            Err(err) => panic!(
                "axle needs the system library {name} (Debian: apt-get install libxml2-dev libxslt1-dev pkg-config): {err}"
            ),
        };
        for path in &lib.include_paths {
            build.include(path);
        }
    }
    build.compile("axleshim");
    println!("cargo:rerun-if-changed=csrc/shim.c");
    println!("cargo:rerun-if-changed=csrc/dtd.c");
    println!("cargo:rerun-if-changed=csrc/xinclude.c");
    println!("cargo:rerun-if-changed=csrc/html.c");
    println!("cargo:rerun-if-changed=csrc/untrusted.c");
    println!("cargo:rerun-if-changed=csrc/xpath_pool.c");
    println!("cargo:rerun-if-changed=csrc/sort.c");
    println!("cargo:rerun-if-changed=build.rs");
}
