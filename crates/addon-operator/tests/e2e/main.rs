//! End-to-end tests: the real `addon-operator` binary on temporary module trees with bash hooks.

mod check;
mod support;
