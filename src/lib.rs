//! Axle (in progress)
#![deny(unsafe_code)]
pub mod ffi;
