//! `GET /graph` of the debug API: the module graph as Graphviz DOT (`?format=text`), or as a
//! PNG drawn by the `dot` binary when it is on PATH (501 pointing to `format=text` otherwise).

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::reply::Reply;
use crate::runtime::edges::status::StatusSource;

/// How long `dot` may take to draw the graph.
const DOT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest PNG read back from `dot`.
const MAX_PNG_BYTES: u64 = 32 << 20;

/// Answers `GET /graph?format=...`.
pub async fn reply(status: &dyn StatusSource, query: &HashMap<String, String>) -> Reply {
    let Some(dot) = status.module_graph() else {
        return Reply::text(
            404,
            "Error: the module graph is not available in this version",
        );
    };
    if query.get("format").map(String::as_str) == Some("text") {
        return Reply::text(200, dot);
    }
    png_reply(render_png(&dot).await)
}

/// The answer for a drawing of the graph.
fn png_reply(drawn: Result<Vec<u8>, PngError>) -> Reply {
    match drawn {
        Ok(png) => Reply::png(png),
        Err(PngError::NoDot) => Reply::text(
            501,
            "Error: drawing the graph needs Graphviz's `dot` on the operator's PATH; \
             GET /graph?format=text gives the graph as DOT (`dot -Tpng` draws it)",
        ),
        Err(PngError::Failed(message)) => Reply::text(
            500,
            format!("Error: couldn't draw the graph with dot: {message}"),
        ),
    }
}

enum PngError {
    NoDot,
    Failed(String),
}

/// Runs `dot -Tpng` on `source`, bounded in time and output size.
async fn render_png(source: &str) -> Result<Vec<u8>, PngError> {
    let child = tokio::process::Command::new("dot")
        .arg("-Tpng")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(PngError::NoDot),
        Err(e) => return Err(PngError::Failed(e.to_string())),
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(PngError::Failed("no pipes to dot".into()));
    };
    let source = source.as_bytes().to_vec();
    let write = async move {
        let _ = stdin.write_all(&source).await;
        drop(stdin);
    };
    let mut png = Vec::new();
    let mut errors = String::new();
    let read = async {
        let (mut stdout, mut stderr) = (stdout.take(MAX_PNG_BYTES), stderr.take(64 * 1024));
        let out = stdout.read_to_end(&mut png);
        let err = stderr.read_to_string(&mut errors);
        let _ = tokio::join!(out, err);
        child.wait().await
    };
    let run = async { tokio::join!(write, read).1 };
    match tokio::time::timeout(DOT_TIMEOUT, run).await {
        Err(_) => Err(PngError::Failed(format!(
            "no answer in {}s",
            DOT_TIMEOUT.as_secs()
        ))),
        Ok(Err(e)) => Err(PngError::Failed(e.to_string())),
        Ok(Ok(exit)) if exit.success() => Ok(png),
        Ok(Ok(exit)) => Err(PngError::Failed(format!("{exit}: {}", errors.trim()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_dot_the_answer_is_501_pointing_to_format_text() {
        let reply = png_reply(Err(PngError::NoDot));
        assert_eq!(reply.status, 501);
        assert!(
            reply.body_text().contains("GET /graph?format=text"),
            "{}",
            reply.body_text()
        );
        let reply = png_reply(Ok(b"\x89PNG".to_vec()));
        assert_eq!((reply.status, reply.content_type), (200, "image/png"));
    }
}
