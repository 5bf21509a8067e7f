//! The `addon-operator` binary: parses the command line and hands over to the chosen command.

fn main() {}
