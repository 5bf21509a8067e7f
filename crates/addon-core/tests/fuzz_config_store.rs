//! Fuzz target: config store data (the ConfigMap `data` map and the config file text) gives a config or errors, and a config that loads renders back.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fuzz_support;

use std::collections::BTreeMap;

use addon_core::config::Config;
use fuzz_support::{Rng, cases, corpus, deep, mutate};

const KEYS: &[&str] = &[
    "global",
    "simpleModule",
    "simpleModuleEnabled",
    "simple-module",
    "Global",
    "aEnabled",
    "x.y",
    "",
    "123",
    "moduleEnabledEnabled",
];
const WORDS: &[&str] = &[
    "enabled: ",
    "global:\n  ",
    "Enabled: yes\n",
    "a: {b: [1, 2]}\n",
];

fn check_data(data: &BTreeMap<String, String>) {
    let (config, _errors) = Config::from_data_partial(data);
    let _ = config.to_data();
    let _ = config.to_file_text();
}

fn check_file(text: &str) {
    let (config, _errors) = Config::from_file_partial("config.yaml", text);
    if let Ok(rendered) = config.to_file_text() {
        let _ = Config::from_file("config.yaml", &rendered);
    }
}

#[test]
fn mutated_configmap_data_gives_a_config_or_errors() {
    let seeds = corpus("config", |n| n.ends_with(".yaml"));
    let mut rng = Rng::new("config_data");
    for _ in 0..cases(300) {
        let mut data = BTreeMap::new();
        for _ in 0..1 + rng.below(4) {
            let key = rng.pick(KEYS).to_string();
            let seed = rng.pick(&seeds).clone();
            data.insert(key, mutate(&mut rng, &seed, WORDS));
        }
        check_data(&data);
    }
}

#[test]
fn mutated_config_files_give_a_config_or_errors() {
    let seeds = corpus("config", |n| n.ends_with(".yaml"));
    let mut rng = Rng::new("config_file");
    for _ in 0..cases(300) {
        let seed = rng.pick(&seeds).clone();
        check_file(&mutate(&mut rng, &seed, WORDS));
    }
}

#[test]
fn deep_and_odd_config_texts_are_errors() {
    for text in deep(100_000) {
        check_file(&text);
        check_file(&format!("global: {text}"));
        check_data(&BTreeMap::from([("global".to_string(), text)]));
    }
    check_file("\u{0}\u{feff}global: &a [*a]");
    check_file("global: &a {b: *a}");
}
