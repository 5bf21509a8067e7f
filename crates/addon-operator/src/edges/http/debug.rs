//! The debug API (upstream routes): queues, global and module values, hooks and their snapshots,
//! runtime settings (`log.level`), chosen format by extension.
//! Routing is a pure function of the path and query so every route is testable without sockets.

use std::collections::HashMap;
use std::sync::Arc;

use addon_core::names::ModuleName;
use addon_core::queue::QueueDump;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::format::Format;
pub use super::reply::Reply;
use crate::runtime::edges::status::StatusSource;

/// Routes of the debug API, as `/discovery` lists them.
pub const ROUTES: &[&str] = &[
    "/queue/list.{json|yaml|text}?showEmpty=true",
    "/queue/main.{json|yaml|text}",
    "/global/list.{json|yaml|text}",
    "/global/values.{json|yaml|text}",
    "/global/config.{json|yaml|text}",
    "/global/patches.{json|yaml|text}",
    "/global/snapshots.{json|yaml|text}",
    "/module/list.{json|yaml|text}",
    "/module/resource-monitor.{json|yaml|text}",
    "/module/{name}/values.{json|yaml|text}?global=true",
    "/module/{name}/config.{json|yaml|text}?global=true",
    "/module/{name}/patches.{json|yaml|text}",
    "/module/{name}/snapshots.{json|yaml|text}",
    "/hook/list.{json|yaml|text}",
    "/hook/{name}/snapshots.{json|yaml|text}?module={module}",
    "/config/list.{json|yaml|text}",
    "/tree/reload.{json|yaml|text}",
    "/graph?format=text (PNG without format=text; needs Graphviz's dot)",
    "POST /config/set?name=log.level&value={error|warn|info|debug|trace}[&duration=10m]",
];

/// Answers `GET path?query`.
pub fn handle(status: &dyn StatusSource, path: &str, query: &HashMap<String, String>) -> Reply {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        [""] => Some(Reply::text(200, "debug endpoint is alive")),
        ["discovery"] => Some(Reply::text(200, discovery())),
        [area, last] => with_format(last, |name, format| match *area {
            "queue" => queue(status, name, format, flag(query, "showEmpty")),
            "global" => global(status, name, format),
            "module" => module_wide(status, name, format),
            "hook" if name == "list" => hook_list(status, format),
            "config" if name == "list" => Some(config_list(format)),
            "tree" if name == "reload" => Some(tree_reload(status, format)),
            _ => None,
        }),
        ["module", module, last] => with_format(last, |name, format| {
            module_route(status, module, name, format, flag(query, "global"))
        }),
        ["hook", hook @ .., last] if !hook.is_empty() => with_format(last, |name, format| {
            (name == "snapshots")
                .then(|| hook_snapshots(status, &hook.join("/"), query.get("module"), format))
        }),
        _ => None,
    }
    .unwrap_or_else(|| Reply::not_found(format!("no route {path}")))
}

/// Answers `POST path?query`: `/config/set?name=log.level&value=debug` changes the log level
/// (`debug` for 30 minutes; `&duration=10m` makes any level temporary, as upstream).
pub fn handle_post(path: &str, query: &HashMap<String, String>) -> Reply {
    if path.trim_end_matches('/') != "/config/set" {
        return Reply::not_found(format!("no route POST {path}"));
    }
    let (Some(name), Some(value)) = (query.get("name"), query.get("value")) else {
        return Reply::text(400, "Error: 'name' and 'value' are required");
    };
    if name != "log.level" {
        return Reply::text(
            400,
            format!("Error: unknown runtime setting '{name}' (known: log.level)"),
        );
    }
    let duration = match query.get("duration").map(|d| d.trim()) {
        None | Some("") => None,
        Some(text) => match addon_core::hook_config::parse_go_duration(text) {
            Ok(duration) => Some(duration),
            Err(e) => return Reply::text(400, format!("Error: parse duration: {e}")),
        },
    };
    match crate::logging::set_level(value, duration) {
        Ok(()) => Reply::text(
            200,
            format!("log.level set to {}", value.trim().to_ascii_lowercase()),
        ),
        Err(e) => Reply::text(400, format!("Error: {e}")),
    }
}

/// Runtime settings, as upstream's `config list`.
fn config_list(format: Format) -> Reply {
    let level = crate::logging::level().unwrap_or_else(|| "unknown".into());
    match format {
        Format::Text => Reply::ok(format, format!("log.level: {level}\n")),
        _ => Reply::ok(format, format.render(&json!({ "log.level": level }))),
    }
}

/// The last reload of the module tree; 404 before the first one.
fn tree_reload(status: &dyn StatusSource, format: Format) -> Reply {
    match status.tree_reload() {
        Some(record) => Reply::ok(format, format.render(&record)),
        None => Reply::not_found("the module tree was not reloaded"),
    }
}

fn hook_list(status: &dyn StatusSource, format: Format) -> Option<Reply> {
    let Some(hooks) = status.hooks() else {
        return Some(Reply::not_found(
            "hook list is not available in this version",
        ));
    };
    Some(match format {
        Format::Text => Reply::ok(format, hooks_table(&hooks)),
        _ => Reply::ok(format, format.render(&json!({ "hooks": hooks }))),
    })
}

/// `HOOK  MODULE  BINDINGS` with aligned columns; `-` for a global hook's module.
fn hooks_table(hooks: &Value) -> String {
    let rows: Vec<[String; 3]> = hooks
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| {
            let text = |v: &Value| v.as_str().unwrap_or("-").to_string();
            let bindings = h["bindings"].as_array().into_iter().flatten();
            let bindings: Vec<String> = bindings.map(text).collect();
            [text(&h["name"]), text(&h["module"]), bindings.join(", ")]
        })
        .collect();
    let header = ["HOOK".to_string(), "MODULE".into(), "BINDINGS".into()];
    let width = |i: usize| {
        let longest = rows.iter().map(|r| r[i].len()).max().unwrap_or(0);
        longest.max(header[i].len())
    };
    let (w0, w1) = (width(0), width(1));
    std::iter::once(&header)
        .chain(&rows)
        .map(|r| {
            format!("{:w0$}  {:w1$}  {}", r[0], r[1], r[2])
                .trim_end()
                .to_string()
                + "\n"
        })
        .collect()
}

fn hook_snapshots(
    status: &dyn StatusSource,
    hook: &str,
    module: Option<&String>,
    format: Format,
) -> Reply {
    let known = status.hooks().unwrap_or(Value::Null);
    let exists = known.as_array().into_iter().flatten().any(|h| {
        h["name"].as_str() == Some(hook) && h["module"].as_str() == module.map(String::as_str)
    });
    let owner = module.map_or_else(
        || "global hook".to_string(),
        |m| format!("module '{m}': hook"),
    );
    if !exists {
        return Reply::not_found(format!("{owner} '{hook}' not found"));
    }
    match status.hook_snapshot_items(module.map(String::as_str), hook) {
        Some(bindings) => Reply::ok(format, super::snapshots::render(format, &bindings)),
        None => Reply::not_found("hook snapshots are not available in this version"),
    }
}

fn with_format(segment: &str, route: impl FnOnce(&str, Format) -> Option<Reply>) -> Option<Reply> {
    let (name, format) = Format::split(segment);
    route(name, format?)
}

fn flag(query: &HashMap<String, String>, key: &str) -> bool {
    query
        .get(key)
        .is_some_and(|v| matches!(v.as_str(), "true" | "1" | "t" | "T" | "TRUE" | "True"))
}

fn discovery() -> String {
    ROUTES.iter().map(|r| format!("GET {r}\n")).collect()
}

fn queue(status: &dyn StatusSource, name: &str, format: Format, show_empty: bool) -> Option<Reply> {
    match name {
        "list" => {
            let dump = status.queue_list(show_empty);
            Some(match format {
                Format::Text => Reply::ok(format, dump.to_text()),
                _ => Reply::ok(format, format.render(&dump.to_json())),
            })
        }
        "main" => {
            let dump = main_queue(status);
            Some(match format {
                Format::Text => Reply::ok(format, dump.to_text()),
                _ => Reply::ok(format, format.render(&serde_json::to_value(&dump).ok()?)),
            })
        }
        _ => None,
    }
}

fn main_queue(status: &dyn StatusSource) -> QueueDump {
    let list = status.queue_list(true);
    let main = addon_core::names::QueueName::MAIN;
    list.active
        .into_iter()
        .chain(list.empty.unwrap_or_default())
        .find(|queue| queue.name == main)
        .unwrap_or(QueueDump {
            name: main.to_string(),
            tasks_count: 0,
            status: None,
            tasks: Vec::new(),
        })
}

fn global(status: &dyn StatusSource, name: &str, format: Format) -> Option<Reply> {
    let doc = match name {
        "list" => json!({ "globalHooks": status.global_hooks() }),
        "values" => status.global_values(),
        "config" => status.global_config(),
        "patches" => return Some(optional(status.global_patches(), format, "global patches")),
        "snapshots" => {
            return Some(optional(
                status.global_snapshots(),
                format,
                "global snapshots",
            ));
        }
        _ => return None,
    };
    Some(Reply::ok(format, format.render(&doc)))
}

fn module_wide(status: &dyn StatusSource, name: &str, format: Format) -> Option<Reply> {
    match name {
        "list" => {
            let mut modules = status.enabled_modules();
            modules.sort();
            if format == Format::Text {
                let mut lines: String = modules.iter().map(|m| format!("{m}\n")).collect();
                for (module, reason) in status.modules_not_running() {
                    lines.push_str(&format!("{module} (not running: {reason})\n"));
                }
                return Some(Reply::ok(format, lines));
            }
            let mut doc = json!({ "enabledModules": modules });
            let not_running = status.modules_not_running();
            if !not_running.is_empty() {
                let reasons: serde_json::Map<String, Value> = (not_running.into_iter())
                    .map(|(module, reason)| (module, Value::String(reason)))
                    .collect();
                doc["notRunning"] = Value::Object(reasons);
            }
            let reasons = status.disabled_reasons();
            if !reasons.is_empty() {
                doc["disabledReasons"] = json!(reasons);
            }
            if let Some(releases) = status.releases() {
                doc["releases"] = releases;
            }
            Some(Reply::ok(format, format.render(&doc)))
        }
        "resource-monitor" => Some(optional(
            status.resource_monitor(),
            format,
            "resource monitor",
        )),
        _ => None,
    }
}

fn module_route(
    status: &dyn StatusSource,
    module: &str,
    name: &str,
    format: Format,
    with_global: bool,
) -> Option<Reply> {
    let Some(values) = status.module_values(module) else {
        return matches!(name, "values" | "config" | "patches" | "snapshots")
            .then(|| Reply::not_found(format!("module '{module}' not found")));
    };
    let doc = match name {
        "values" if with_global => with_global_section(module, status.global_values(), values),
        "values" => values,
        "config" => {
            let config = status.module_config(module).unwrap_or(Value::Null);
            if with_global {
                with_global_section(module, status.global_config(), config)
            } else {
                config
            }
        }
        "patches" => {
            return Some(optional(
                status.module_patches(module),
                format,
                "module patches",
            ));
        }
        "snapshots" => {
            return Some(optional(
                status.module_snapshots(module),
                format,
                "module snapshots",
            ));
        }
        _ => return None,
    };
    Some(Reply::ok(format, format.render(&doc)))
}

/// `{"global": ..., "<valuesKey>": ...}` as upstream's `?global=true`.
fn with_global_section(module: &str, global: Value, values: Value) -> Value {
    let key = ModuleName::new(module).map_or_else(|_| module.to_string(), |m| m.values_key());
    let mut doc = serde_json::Map::new();
    doc.insert("global".into(), global);
    doc.insert(key, values);
    Value::Object(doc)
}

fn optional(doc: Option<Value>, format: Format, what: &str) -> Reply {
    match doc {
        Some(doc) => Reply::ok(format, format.render(&doc)),
        None => Reply::not_found(format!("{what} are not available in this version")),
    }
}

/// The axum router of the debug API (unix socket and the optional TCP listener).
pub fn router(status: Arc<dyn StatusSource>) -> Router {
    Router::new().fallback(serve_route).with_state(status)
}

async fn serve_route(
    State(status): State<Arc<dyn StatusSource>>,
    method: Method,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let reply = if method == Method::POST {
        handle_post(uri.path(), &query)
    } else if uri.path().trim_end_matches('/') == "/graph" {
        super::graph::reply(status.as_ref(), &query).await
    } else {
        handle(status.as_ref(), uri.path(), &query)
    };
    let code = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        code,
        [(header::CONTENT_TYPE, reply.content_type)],
        reply.body,
    )
        .into_response()
}
