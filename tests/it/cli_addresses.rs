//! One set of address forms for every subcommand that takes one (issue
//! #37 item 2): `PORT`, `:PORT`, `HOST:PORT`, `[IPv6]:PORT` and
//! `http://HOST:PORT[/]` for `serve --listen` and `--admin` (listeners),
//! `cache stats|purge --admin` and `warm --server` (clients, against a
//! real server on ephemeral loopback ports); a bad one is refused by each,
//! listing the forms.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::support::{TestSite, axle, axle_output};
use crate::tiers_support::{Axle, TiersSite};

/// The port of `HOST:PORT` or `http://HOST:PORT`.
fn port_of(addr: &str) -> String {
    addr.trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_string()
}

/// Every client spelling of the address `addr` (`127.0.0.1:PORT`).
fn client_forms(addr: &str) -> Vec<String> {
    let port = port_of(addr);
    vec![
        port.clone(),
        format!(":{port}"),
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}/"),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn cache_commands_take_every_form() {
    let site = TiersSite::new();
    let server = Axle::start(&site.root, true, &[]);
    for form in client_forms(server.admin()) {
        let (ok, out, err) = axle_output(&["cache", "stats", "--admin", &form]);
        assert!(ok, "cache stats --admin {form}: {err}");
        let stats: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(stats.get("hits").is_some(), "{form}: {out}");
        let (ok, out, err) = axle_output(&["cache", "purge", "--admin", &form, "/docs/"]);
        assert!(ok, "cache purge --admin {form}: {err}");
        assert!(out.contains("\"purged\""), "{form}: {out}");
    }
    let mut server = server;
    server.kill();
    // An admin listener on IPv6 loopback, by its bracketed form.
    let v6 = Axle::start_admin(&site.root, Some("[::1]:0"), &[]);
    let port = port_of(v6.admin());
    for form in [format!("[::1]:{port}"), format!("http://[::1]:{port}/")] {
        let (ok, _, err) = axle_output(&["cache", "stats", "--admin", &form]);
        assert!(ok, "cache stats --admin {form}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn warm_takes_every_form() {
    let site = TiersSite::new();
    let server = Axle::start(&site.root, false, &[]);
    let list = site.beside("in").join("urls.txt");
    std::fs::create_dir_all(list.parent().unwrap()).unwrap();
    std::fs::write(&list, "/small.xml\n").unwrap();
    let addr = server.url.trim_start_matches("http://").to_string();
    for (i, form) in client_forms(&addr).into_iter().enumerate() {
        let (ok, out, err) =
            axle_output(&["warm", "--server", &form, "--urls", list.to_str().unwrap()]);
        assert!(ok, "warm --server {form}: {out}{err}");
        // The first renders the page, every later form finds it cached:
        // all reached the same server.
        let want = if i == 0 {
            "1 rendered now"
        } else {
            "1 already cached"
        };
        assert!(out.contains(want), "warm --server {form}: {out}");
    }
}

/// `axle serve ARGS --root ROOT`: the addresses its start lines print
/// (the public one, and the admin's when asked for).
fn serve_addresses(
    args: &[&str],
    root: &std::path::Path,
) -> (std::process::Child, String, Option<String>) {
    let admin = args.contains(&"--admin");
    let mut child = axle()
        .arg("serve")
        .args(args)
        .arg("--root")
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (mut public, mut admin_addr) = (None, None);
    while public.is_none() || (admin && admin_addr.is_none()) {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "serve {args:?} stopped"
        );
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(|w| {
                w.trim_end_matches('/')
                    .trim_start_matches("http://")
                    .to_string()
            });
        if line.contains("admin listener") {
            admin_addr = url;
        } else if line.contains("serving") {
            public = url;
        }
    }
    (child, public.unwrap(), admin_addr)
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_listens_on_every_form() {
    let site = TestSite::new();
    for (form, host) in [
        ("0", "127.0.0.1"),
        (":0", "0.0.0.0"),
        ("127.0.0.1:0", "127.0.0.1"),
        ("localhost:0", ""),
        ("[::1]:0", "[::1]"),
        ("http://127.0.0.1:0", "127.0.0.1"),
        ("http://127.0.0.1:0/", "127.0.0.1"),
    ] {
        let (mut child, public, admin) =
            serve_addresses(&["--listen", form, "--admin", form], &site.root);
        let admin = admin.unwrap();
        for addr in [&public, &admin] {
            assert!(addr.starts_with(host), "{form}: {addr}");
        }
        // Reached on loopback (a wildcard listener too).
        let port = port_of(&public);
        let at = if public.starts_with("[::1]") {
            format!("[::1]:{port}")
        } else if public.starts_with("127.") || public.starts_with("0.0.0.0") {
            format!("127.0.0.1:{port}")
        } else {
            public.clone()
        };
        let r = reqwest::get(format!("http://{at}/two.xml")).await.unwrap();
        assert_eq!(r.status(), 200, "--listen {form}");
        let (ok, _, err) = axle_output(&["cache", "stats", "--admin", &admin]);
        assert!(ok, "--admin {form}: {err}");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn every_subcommand_refuses_a_bad_address_listing_the_forms() {
    for args in [
        &["serve", "--listen"][..],
        &["serve", "--admin"],
        &["cache", "stats", "--admin"],
        &["cache", "purge", "--admin"],
        &["warm", "--urls", "/dev/null", "--server"],
    ] {
        for bad in [
            "127.0.0.1:99999",
            "host:port",
            "http://h:1/path",
            "::1:8080",
        ] {
            let mut all = args.to_vec();
            all.push(bad);
            let (ok, _, err) = axle_output(&all);
            assert!(!ok, "{all:?}");
            assert!(
                err.contains("PORT, :PORT, HOST:PORT, [IPv6]:PORT or http://HOST:PORT"),
                "{all:?}: {err}"
            );
        }
    }
}
