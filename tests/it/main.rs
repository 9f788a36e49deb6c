//! The one integration test binary: black-box HTTP tests against a real
//! server on an ephemeral loopback port.

mod support;

mod access_log;
mod admin;
mod axkit;
mod build;
mod builder;
mod cache_modes;
mod cache_tiers;
mod cli;
mod compression;
mod compression_limits;
mod concurrency;
mod connection;
mod crash;
mod edits;
mod error_pages;
mod filters;
mod freshness;
mod http;
mod limits_http;
mod limits_render;
mod links;
mod listings;
mod metrics;
mod pages;
mod post_attacks;
mod private_files;
mod process_trees;
mod redis_support;
mod root_swap;
mod samples;
mod security;
mod shared_cache;
mod shared_cache_cluster;
mod sources;
mod static_host;
mod status;
mod tiers_support;
mod warm;
mod xsp;
mod xsp_esql;
mod xsp_postgres;
