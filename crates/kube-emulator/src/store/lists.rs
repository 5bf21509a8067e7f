//! Lists: pages read from a snapshot of one resource outside the store's lock, and the snapshots
//! kept for a list's later pages, so a paged list shows the state at its first page's version.

use std::collections::VecDeque;
use std::ops::Bound;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::objects::{ObjectId, Tree};
use crate::resources::ResKey;

/// How long a list's snapshot serves its later pages; after that a `continue` token is expired
/// (`410`), as one is after etcd's compaction, which kube-apiserver runs every 5 minutes.
pub const KEEP_FOR: Duration = Duration::from_secs(300);
/// Most snapshots kept at once; the oldest goes first.
const MAX_KEPT: usize = 64;

/// Where a later page of a list starts: what a `continue` token carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The resourceVersion of the list's first page: its snapshot.
    pub rv: u64,
    /// The last object the previous page returned.
    pub after: ObjectId,
    /// How many objects come after `after`, when the list counts them (it has no selector).
    pub remaining: Option<usize>,
}

/// What one page asks for.
#[derive(Debug, Clone, Copy, Default)]
pub struct PageRequest<'a> {
    /// One namespace, or all.
    pub ns: Option<&'a str>,
    /// The previous page's cursor; `None` starts a list.
    pub from: Option<&'a Cursor>,
    /// Most objects on the page; `None` is the whole list.
    pub limit: Option<usize>,
    /// Whether to count the objects after the page; only a list without selectors may (its
    /// `matches` accepts everything), as kube-apiserver sets `remainingItemCount` only then.
    pub count_rest: bool,
}

/// One page of a list.
#[derive(Debug)]
pub struct Page {
    /// The objects, in (namespace, name) order.
    pub items: Vec<Value>,
    /// The resourceVersion the page shows: that of the list's first page.
    pub rv: u64,
    /// Where the next page starts, when more objects match.
    pub next: Option<Cursor>,
}

/// What a page is read from.
pub struct Source {
    /// The resource's objects at `rv`.
    pub tree: Tree,
    /// The resourceVersion of the snapshot.
    pub rv: u64,
    /// How many objects the snapshot has in the list's namespace (or in all).
    pub total: usize,
}

/// Reads one page from `source`: the objects of the namespace after the cursor that `matches`
/// accepts, up to the limit. Returns it with how many objects it looked at: the page's, those
/// `matches` refused, and the first match after a full page (which tells that there are more).
pub fn read_page(
    source: &Source,
    req: &PageRequest<'_>,
    matches: impl Fn(&Value) -> bool,
) -> (Page, usize) {
    let start = match (req.from, req.ns) {
        (Some(cursor), _) => Bound::Excluded(cursor.after.clone()),
        (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
        (None, None) => Bound::Unbounded,
    };
    let (mut items, mut last, mut examined, mut more) = (Vec::new(), None, 0, false);
    for (id, object) in source.tree.range((start, Bound::Unbounded)) {
        if req.ns.is_some_and(|want| want != id.0) {
            break;
        }
        examined += 1;
        if !matches(object) {
            continue;
        }
        if req.limit.is_some_and(|limit| items.len() >= limit) {
            more = true;
            break;
        }
        items.push(object.clone());
        last = Some(id);
    }
    let next = last.filter(|_| more).map(|after| Cursor {
        rv: source.rv,
        after: after.clone(),
        remaining: remaining(source, req, items.len()),
    });
    let page = Page {
        items,
        rv: source.rv,
        next,
    };
    (page, examined)
}

/// Objects after a page of `taken` objects, for a list that counts them.
fn remaining(source: &Source, req: &PageRequest<'_>, taken: usize) -> Option<usize> {
    if !req.count_rest {
        return None;
    }
    let from_here = match req.from {
        Some(cursor) => cursor.remaining?,
        None => source.total,
    };
    Some(from_here.saturating_sub(taken))
}

/// Snapshots that lists started from, kept for their later pages.
#[derive(Default)]
pub struct Kept {
    entries: VecDeque<KeptSnapshot>,
}

struct KeptSnapshot {
    key: ResKey,
    rv: u64,
    tree: Tree,
    taken: Instant,
}

impl Kept {
    /// Keeps the snapshot of `key` at `rv` (lists starting at the same version share one).
    pub fn keep(&mut self, key: &ResKey, rv: u64, tree: Tree, now: Instant) {
        self.expire(now);
        if let Some(kept) = self
            .entries
            .iter_mut()
            .find(|e| e.rv == rv && e.key == *key)
        {
            kept.taken = now;
            return;
        }
        if self.entries.len() >= MAX_KEPT {
            self.entries.pop_front();
        }
        self.entries.push_back(KeptSnapshot {
            key: key.clone(),
            rv,
            tree,
            taken: now,
        });
    }

    /// The kept snapshot of `key` at `rv`, unless it expired.
    pub fn find(&mut self, key: &ResKey, rv: u64, now: Instant) -> Option<Tree> {
        self.expire(now);
        self.entries
            .iter()
            .find(|e| e.rv == rv && e.key == *key)
            .map(|e| e.tree.clone())
    }

    /// Forgets every snapshot: every `continue` token handed out so far is expired.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    fn expire(&mut self, now: Instant) {
        self.entries
            .retain(|e| now.saturating_duration_since(e.taken) < KEEP_FOR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source(ids: &[(&str, &str)]) -> Source {
        let tree: Tree = ids
            .iter()
            .map(|(ns, name)| {
                let object = json!({"metadata": {"namespace": ns, "name": name}});
                ((ns.to_string(), name.to_string()), object)
            })
            .collect();
        Source {
            total: tree.size(),
            tree,
            rv: 7,
        }
    }

    fn name(object: &Value) -> &str {
        object["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn names(page: &Page) -> Vec<&str> {
        page.items.iter().map(name).collect()
    }

    #[test]
    fn pages_of_a_namespace_resume_after_the_cursor_and_count_the_rest() {
        let src = source(&[("a", "1"), ("b", "1"), ("b", "2"), ("b", "3"), ("c", "1")]);
        let req = PageRequest {
            ns: Some("b"),
            limit: Some(2),
            count_rest: true,
            ..Default::default()
        };
        let (first, examined) = read_page(&Source { total: 3, ..src }, &req, |_| true);
        assert_eq!((names(&first), examined), (vec!["1", "2"], 3));
        let cursor = first.next.clone().unwrap();
        assert_eq!(cursor.remaining, Some(1));
        let src = source(&[("a", "1"), ("b", "1"), ("b", "2"), ("b", "3"), ("c", "1")]);
        let later = PageRequest {
            from: Some(&cursor),
            ..req
        };
        let (second, examined) = read_page(&src, &later, |_| true);
        assert_eq!((names(&second), examined), (vec!["3"], 1));
        assert!(second.next.is_none());
        assert_eq!(second.rv, 7);
    }

    #[test]
    fn a_filtered_page_has_no_count_and_stops_at_the_next_match() {
        let src = source(&[("a", "1"), ("a", "2"), ("a", "3"), ("a", "4"), ("a", "5")]);
        let req = PageRequest {
            limit: Some(1),
            ..Default::default()
        };
        let odd = |o: &Value| o["metadata"]["name"] != "2" && o["metadata"]["name"] != "4";
        let (page, examined) = read_page(&src, &req, odd);
        assert_eq!((names(&page), examined), (vec!["1"], 3));
        assert_eq!(page.next.as_ref().and_then(|c| c.remaining), None);
        let cursor = page.next.unwrap();
        let later = PageRequest {
            from: Some(&cursor),
            ..req
        };
        let (page, _) = read_page(&src, &later, odd);
        assert_eq!(names(&page), ["3"]);
        assert_eq!(page.next.unwrap().after, ("a".to_string(), "3".to_string()));
    }

    mod through_the_store {
        use std::sync::{Arc, Mutex, mpsc};
        use std::time::Duration;

        use serde_json::{Value, json};

        use crate::resources::{ResKey, ResourceInfo};
        use crate::status::ApiError;
        use crate::store::{Page, PageRequest, Store, StoreConfig, WatchFrom};

        fn configmap(i: usize) -> Value {
            let parity = if i.is_multiple_of(2) { "even" } else { "odd" };
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": format!("cm-{i:05}"), "namespace": "default", "labels": {"parity": parity}}})
        }

        fn store_with(n: usize) -> (Store, ResourceInfo) {
            let config = StoreConfig {
                data_dir: None,
                history_limit: 100,
                fsync: false,
                simulate_status: false,
            };
            let store = Store::open(&config).unwrap();
            let info = store
                .registry()
                .by_key(&ResKey::new("", "configmaps"))
                .cloned()
                .unwrap();
            for i in 0..n {
                store.create(&info, configmap(i), false).unwrap();
            }
            (store, info)
        }

        fn even(o: &Value) -> bool {
            o["metadata"]["labels"]["parity"] == "even"
        }

        /// Reads every page of a list; returns the objects' names and the number of pages.
        fn list_all(
            store: &Store,
            first: PageRequest<'_>,
            matches: impl Fn(&Value) -> bool + Copy,
        ) -> (Vec<String>, usize) {
            let key = ResKey::new("", "configmaps");
            let (mut names, mut pages) = (Vec::new(), 0);
            let mut page = store.list_page(&key, &first, matches).unwrap();
            loop {
                pages += 1;
                let name = |o: &Value| o["metadata"]["name"].as_str().unwrap().to_string();
                names.extend(page.items.iter().map(name));
                let Some(cursor) = page.next.take() else {
                    return (names, pages);
                };
                let req = PageRequest {
                    from: Some(&cursor),
                    ..first
                };
                page = store.list_page(&key, &req, matches).unwrap();
            }
        }

        #[test]
        fn a_paged_list_of_n_objects_examines_about_n_objects() {
            let n = 2000;
            let (store, _) = store_with(n);
            let limit = Some(50);
            type Case<'a> = (Option<&'a str>, bool, fn(&Value) -> bool, usize);
            let cases: [Case<'_>; 3] = [
                (None, true, |_| true, n),
                (Some("default"), true, |_| true, n),
                (Some("default"), false, even, n / 2),
            ];
            for (ns, count_rest, matches, expected) in cases {
                let before = store.objects_examined();
                let req = PageRequest {
                    ns,
                    limit,
                    count_rest,
                    ..Default::default()
                };
                let (names, pages) = list_all(&store, req, matches);
                let examined = (store.objects_examined() - before) as usize;
                eprintln!("{ns:?}, counted {count_rest}: {pages} pages, {examined} examined");
                assert_eq!(names.len(), expected);
                // Each object once, plus the one match after each full page; the scan that
                // counted the rest after every page (main before this) looked at n²/2/limit.
                assert!(examined <= n + 2 * pages, "{examined} for {pages} pages");
            }
        }

        #[test]
        fn later_pages_show_the_state_of_the_first_page_and_its_resource_version() {
            let (store, info) = store_with(10);
            let key = info.key();
            let req = PageRequest {
                ns: Some("default"),
                limit: Some(4),
                count_rest: true,
                ..Default::default()
            };
            let first = store.list_page(&key, &req, |_| true).unwrap();
            let cursor = first.next.clone().unwrap();
            assert_eq!(cursor.remaining, Some(6));
            store.create(&info, configmap(99), false).unwrap();
            let gone = crate::store::DeleteOptions::default();
            store.delete(&info, "default", "cm-00008", &gone).unwrap();
            let later = PageRequest {
                from: Some(&cursor),
                ..req
            };
            let second: Page = store.list_page(&key, &later, |_| true).unwrap();
            assert_eq!(second.rv, first.rv);
            assert_eq!(second.items.len(), 4);
            assert_eq!(second.items[3]["metadata"]["name"], "cm-00007");
            assert_eq!(second.next.as_ref().unwrap().remaining, Some(2));
            let third = PageRequest {
                from: second.next.as_ref(),
                ..req
            };
            let last = store.list_page(&key, &third, |_| true).unwrap();
            assert_eq!(last.items[0]["metadata"]["name"], "cm-00008");
            assert!(last.next.is_none());
            store.compact_history();
            let expired = store.list_page(&key, &later, |_| true);
            assert!(matches!(expired, Err(ApiError::ContinueExpired)));
        }

        #[test]
        fn a_write_completes_while_a_list_is_being_read() {
            let (store, info) = store_with(200);
            let store = Arc::new(store);
            let (ask, asked) = mpsc::channel::<()>();
            let (wrote, written) = mpsc::channel::<()>();
            let writer = {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    asked.recv().unwrap();
                    store.create(&info, configmap(1000), false).unwrap();
                    wrote.send(()).unwrap();
                })
            };
            let order = Mutex::new(Vec::new());
            let key = ResKey::new("", "configmaps");
            let rv_before = store.current_rv();
            let page = store
                .list_page(&key, &PageRequest::default(), |_| {
                    let mut order = order.lock().unwrap();
                    if order.is_empty() {
                        ask.send(()).unwrap();
                        // The guard keeps a list that stops writers from hanging the test.
                        let done = written.recv_timeout(Duration::from_secs(10)).is_ok();
                        order.push(if done { "write done" } else { "write waiting" });
                    }
                    true
                })
                .unwrap();
            order.lock().unwrap().push("list done");
            writer.join().unwrap();
            assert_eq!(*order.lock().unwrap(), ["write done", "list done"]);
            assert_eq!((page.rv, page.items.len()), (rv_before, 200));
            assert_eq!(store.current_rv(), rv_before + 1);
        }

        #[test]
        fn a_watch_from_now_sends_the_objects_of_its_start() {
            let (store, info) = store_with(3);
            let start = store.watch(&info.key(), WatchFrom::Now).unwrap();
            store.create(&info, configmap(3), false).unwrap();
            assert_eq!(start.initial.events(|_| true).count(), 3);
            assert!(start.initial.events(|_| true).all(|e| e.rv <= start.rv));
        }
    }

    #[test]
    fn kept_snapshots_expire_and_can_be_cleared() {
        let (key, t0) = (ResKey::new("", "configmaps"), Instant::now());
        let mut kept = Kept::default();
        kept.keep(&key, 5, Tree::default(), t0);
        assert!(kept.find(&key, 5, t0 + KEEP_FOR / 2).is_some());
        assert!(kept.find(&key, 6, t0).is_none());
        assert!(kept.find(&key, 5, t0 + KEEP_FOR).is_none());
        kept.keep(&key, 5, Tree::default(), t0);
        kept.clear();
        assert!(kept.find(&key, 5, t0).is_none());
    }
}
