//! Tests of the projection fast path: which filters are projections, and that `apply_projection` gives exactly what `apply` gives (key order included) or `None`.

use serde_json::{Value, json};

use super::projection::{MAX_NODES, MAX_PATHS};
use super::{JqFilter, JqLimits};

fn compile(src: &str) -> JqFilter {
    JqFilter::compile(src).unwrap_or_else(|e| panic!("{src}: {e}"))
}

#[test]
fn simple_projections_are_recognised_and_everything_else_is_not() {
    let projections = [
        ".",
        ".metadata.name",
        ".metadata.labels",
        r#"."metadata"."name""#,
        r#".["metadata"]["name"]"#,
        ".metadata?.name?",
        "(.metadata | .name)",
        "{name: .metadata.name, ts: .data.ts}",
        "{name}",
        r#"{"a b": .x, if: .y, "é": 1}"#,
        "[.metadata.namespace, .metadata.name]",
        "[.a, [.b, (.c, .d)], {e: .e}]",
        "[]",
        "{}",
        ".a, .b",
        "null, true, 1, \"s\"",
        "{a: .x} | .a",
        "$__loc__",
        "{$__loc__}",
        "{a: .x | .y}",
    ];
    for src in projections {
        assert!(compile(src).is_projection(), "{src} is a projection");
    }
    let others = [
        ".[]",
        ".a[]",
        ".[0]",
        ".a[1:2]",
        ".a // \"x\"",
        ".a + 1",
        "-.a",
        ".a == 1",
        "if .a then .b else .c end",
        "reduce .[] as $x (0; . + $x)",
        "..",
        r#""\(.a)""#,
        "@base64",
        r#"@json "x\(.a)""#,
        "def f: .a; f",
        ". as $x | $x",
        "length",
        ".metadata.name | ascii_downcase",
        "{(.a): 1}",
        r#"{"\(.a)": 1}"#,
        "{a: (.b, .c)}",
        "(.a, .b) | .c",
        "(.a, .b)?",
        "try .a",
        "[.[] | .x]",
        "1.5",
        "1.0",
        "12345678901234567890",
        "label $out | .a",
        ".a and .b",
        ".a = 1",
    ];
    for src in others {
        assert!(!compile(src).is_projection(), "{src} is not a projection");
    }
}

#[test]
fn projections_over_the_caps_are_left_to_the_interpreter() {
    let paths = |n: usize| {
        let items: Vec<String> = (0..n).map(|i| format!(".k{i}")).collect();
        format!("[{}]", items.join(", "))
    };
    assert!(compile(&paths(MAX_PATHS)).is_projection());
    assert!(!compile(&paths(MAX_PATHS + 1)).is_projection());
    // `.a.a.a...`: two nodes (index, key) per field, and `.` under the first.
    let chain = |n: usize| ".a".repeat(n);
    let within = (MAX_NODES - 1) / 2;
    assert!(compile(&chain(within)).is_projection());
    assert!(!compile(&chain(MAX_NODES)).is_projection());
    let literals = |n: usize| vec!["1"; n].join(", ");
    assert!(compile(&literals(MAX_NODES / 2)).is_projection());
    assert!(!compile(&literals(MAX_NODES)).is_projection());
}

fn config_map() -> Value {
    json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "cm", "namespace": "default", "uid": "u-1",
                     "labels": {"zz": "1", "app": "proxy"}},
        "data": {"ts": "2024-01-01T00:00:00Z", "b": "x", "a": "y"}
    })
}

#[test]
fn the_common_filters_on_a_config_map_take_the_fast_path() {
    let cm = config_map();
    for src in [
        ".metadata.name",
        "{name: .metadata.name, ts: .data.ts}",
        ".metadata.labels",
        "[.metadata.namespace, .metadata.name]",
        ".",
    ] {
        let filter = compile(src);
        let fast = filter.apply_projection(&cm);
        assert!(fast.is_some(), "{src} takes the fast path");
        assert_same(src, &filter, &cm, fast);
    }
    let filter = compile("{name: .metadata.name, ts: .data.ts}");
    assert_eq!(
        filter.apply_projection(&cm),
        Some(json!({"name": "cm", "ts": "2024-01-01T00:00:00Z"}))
    );
}

/// `fast` is what `apply` gives on `input`, as JSON text (so key order counts too).
fn assert_same(src: &str, filter: &JqFilter, input: &Value, fast: Option<Value>) {
    let Some(fast) = fast else { return };
    let slow = filter
        .apply(input)
        .unwrap_or_else(|e| panic!("{src} on {input}: fast path gave {fast}, apply failed: {e}"));
    assert_eq!(
        serde_json::to_string(&fast).unwrap(),
        serde_json::to_string(&slow).unwrap(),
        "{src} on {input}"
    );
}

#[test]
fn output_keys_are_sorted_at_every_level_like_apply() {
    let input = json!({"z": {"y": 1, "b": {"d": 1, "c": 2}}, "a": [{"q": 1, "p": 2}]});
    let filter = compile("{z: .z, b: .a, a: 1}");
    let fast = filter.apply_projection(&input);
    assert_eq!(
        serde_json::to_string(&fast).unwrap(),
        r#"{"a":1,"b":[{"p":2,"q":1}],"z":{"b":{"c":2,"d":1},"y":1}}"#
    );
    assert_same("{z: .z, b: .a, a: 1}", &filter, &input, fast);
    let whole = compile(".");
    assert_same(".", &whole, &input, whole.apply_projection(&input));
}

#[test]
fn a_duplicate_key_takes_the_last_value_like_apply() {
    let input = json!({"x": 1, "y": 2});
    let filter = compile("{a: .x, b: 0, a: .y}");
    assert_eq!(
        filter.apply_projection(&input),
        Some(json!({"a": 2, "b": 0}))
    );
    assert_eq!(filter.apply(&input).unwrap(), json!({"a": 2, "b": 0}));
}

#[test]
fn errors_and_numbers_apply_prints_its_own_way_give_none() {
    let none = |src: &str, input: Value| {
        assert_eq!(
            compile(src).apply_projection(&input),
            None,
            "{src} on {input}"
        );
    };
    none(".a", json!("text"));
    none(".a.b", json!({"a": [1]}));
    none(".a?", json!(5));
    none("[.a?, .b]", json!(true));
    none("{x: .a}", json!({"a": 1.0}));
    none(".a", json!({"a": 1.5}));
    none(".", json!({"n": 12345678901234567890u64}));
    none("[.a]", json!({"a": [9223372036854775808u64]}));
    none(".metadata.name | ascii_downcase", config_map());
    // On null and on a missing key a field is null, as in apply.
    assert_eq!(
        compile(".a.b").apply_projection(&json!(null)),
        Some(json!(null))
    );
    assert_eq!(
        compile(".a.b").apply_projection(&json!({"c": 1})),
        Some(json!(null))
    );
    assert_eq!(
        compile(".n").apply_projection(&json!({"n": i64::MIN})),
        Some(json!(i64::MIN))
    );
}

#[test]
fn several_outputs_become_an_array_like_apply() {
    let input = json!({"a": 1, "b": "x"});
    let filter = compile(".a, .b, {c: .a}");
    assert_eq!(
        filter.apply_projection(&input),
        Some(json!([1, "x", {"c": 1}]))
    );
    assert_same(
        ".a, .b, {c: .a}",
        &filter,
        &input,
        filter.apply_projection(&input),
    );
}

#[test]
fn outputs_over_the_limits_give_none() {
    let input = json!({"a": "x".repeat(100)});
    let filter = compile("[.a, .a]");
    let small = JqLimits {
        max_outputs: 10,
        max_output_bytes: 150,
    };
    assert_eq!(filter.apply_projection_bounded(&input, &small), None);
    assert!(filter.apply_bounded(&input, &small).is_err());
    let one = JqLimits {
        max_outputs: 1,
        max_output_bytes: 1000,
    };
    assert_eq!(
        compile(".a, .a").apply_projection_bounded(&input, &one),
        None
    );
    assert!(compile(".a, .a").apply_bounded(&input, &one).is_err());
    assert!(
        compile(".a")
            .apply_projection_bounded(&input, &one)
            .is_some()
    );
}

#[test]
fn strings_with_escapes_and_unicode_are_copied_as_they_are() {
    let input = json!({"s": "a\"b\\c\n\t\u{1}\u{7f} é 日本 😀"});
    let filter = compile(r#"{"é": .s, s: .s}"#);
    let fast = filter.apply_projection(&input);
    assert!(fast.is_some());
    assert_same("escapes", &filter, &input, fast);
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const KEYS: &[&str] = &["a", "b", "name", "metadata", "x y", "é"];

/// `.key`, `."key"`, `.["key"]` (`["key"]` after another field).
fn field(key: &str, first: bool, rng: &mut Rng) -> String {
    let plain = key.chars().all(|c| c.is_ascii_alphanumeric());
    match (plain, rng.below(3)) {
        (true, 0) => format!(".{key}"),
        (_, 1) if first => format!(".[{key:?}]"),
        (_, 1) => format!("[{key:?}]"),
        _ => format!(".{key:?}"),
    }
}

fn gen_path(rng: &mut Rng) -> String {
    let len = rng.below(4);
    if len == 0 {
        return ".".to_string();
    }
    let mut path: String = (0..len)
        .map(|i| {
            let key = *rng.pick(KEYS);
            field(key, i == 0, rng)
        })
        .collect();
    if rng.below(5) == 0 {
        path.push('?');
    }
    path
}

fn gen_filter(rng: &mut Rng, depth: usize) -> String {
    let choice = if depth == 0 { 0 } else { rng.below(6) };
    match choice {
        0 | 1 => gen_path(rng),
        2 => {
            let n = rng.below(4);
            let items: Vec<String> = (0..n).map(|_| gen_filter(rng, depth - 1)).collect();
            format!("[{}]", items.join(", "))
        }
        3 => {
            let n = rng.below(4);
            let entries: Vec<String> = (0..n).map(|_| gen_entry(rng, depth - 1)).collect();
            format!("{{{}}}", entries.join(", "))
        }
        4 => format!(
            "({} | {})",
            gen_filter(rng, depth - 1),
            gen_filter(rng, depth - 1)
        ),
        _ => (*rng.pick(&["null", "true", "false", "0", "42", "\"s\\n\""])).to_string(),
    }
}

fn gen_entry(rng: &mut Rng, depth: usize) -> String {
    let key = *rng.pick(KEYS);
    let plain = key.chars().all(|c| c.is_ascii_alphanumeric());
    if plain && rng.below(4) == 0 {
        return key.to_string();
    }
    format!("{key:?}: {}", gen_filter(rng, depth))
}

fn gen_value(rng: &mut Rng, depth: usize) -> Value {
    let scalars = [
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(-7),
        json!(i64::MAX),
        json!(9223372036854775808u64),
        json!(1.0),
        json!(1.5),
        json!("plain"),
        json!("q\"\\\n\u{2}é😀"),
    ];
    let kind = if depth == 0 { 0 } else { rng.below(4) };
    match kind {
        0 | 1 => rng.pick(&scalars).clone(),
        2 => Value::Array(
            (0..rng.below(3))
                .map(|_| gen_value(rng, depth - 1))
                .collect(),
        ),
        _ => {
            // Keys in a random order: the output must be sorted all the same.
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(5) {
                map.insert(rng.pick(KEYS).to_string(), gen_value(rng, depth - 1));
            }
            Value::Object(map)
        }
    }
}

fn hand_written_inputs() -> Vec<Value> {
    vec![
        config_map(),
        json!(null),
        json!("text"),
        json!([1, 2]),
        json!({}),
        json!({"metadata": null, "name": [{"b": 1, "a": 2}]}),
        json!({"metadata": {"name": 5, "x y": {"é": "ü"}}, "b": {"a": 1.5}}),
        json!({"a": {"b": {"name": 12345678901234567890u64}}, "b": 1.0}),
        json!({"b": {"z": 1, "a": {"y": true, "b": false}}, "a": "x"}),
    ]
}

#[test]
fn the_fast_path_gives_exactly_what_apply_gives_on_generated_filters_and_inputs() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut filters: Vec<String> = [
        ".metadata.name",
        "{name: .metadata.name, ts: .data.ts}",
        ".metadata.labels",
        "[.metadata.namespace, .metadata.name]",
        "{name, metadata: .metadata | {name}}",
        "{a: .a, a: .b}",
        ".a, .b",
        "[.a?, .b.name?]",
        "$__loc__",
    ]
    .map(String::from)
    .to_vec();
    filters.extend((0..300).map(|_| gen_filter(&mut rng, 3)));
    let mut inputs = hand_written_inputs();
    inputs.extend((0..40).map(|_| gen_value(&mut rng, 4)));
    let (mut some, mut total) = (0usize, 0usize);
    for src in &filters {
        let filter = compile(src);
        if !filter.is_projection() {
            continue;
        }
        for input in &inputs {
            let fast = filter.apply_projection(input);
            total += 1;
            some += usize::from(fast.is_some());
            assert_same(src, &filter, input, fast);
        }
    }
    assert!(
        total > 5000,
        "most generated filters are projections: {total}"
    );
    assert!(
        some * 4 > total,
        "the fast path answers often: {some} of {total}"
    );
}
