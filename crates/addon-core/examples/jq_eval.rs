//! Evaluates a jq filter on JSON inputs from stdin, one result per line (for comparing with gojq by hand).

use std::io::Read;

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_else(|| ".".to_string());
    let mut text = String::new();
    let _ = std::io::stdin().read_to_string(&mut text);
    let compiled = match addon_core::jq::JqFilter::compile(&filter) {
        Ok(f) => f,
        Err(e) => {
            println!("ERROR {e}");
            return;
        }
    };
    for input in serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>() {
        let Ok(input) = input else { break };
        match compiled.apply(&input) {
            Ok(v) => println!("{}", serde_json::to_string(&v).unwrap_or_default()),
            Err(e) => println!("ERROR {e}"),
        }
    }
}
