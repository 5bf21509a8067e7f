//! One shared copy of each short string that many records repeat (namespaces, kinds,
//! `apiVersion`s): a record holds an `Arc<str>` to it instead of its own copy.

use std::collections::BTreeSet;
use std::sync::Arc;

/// The shared copies handed out so far.
#[derive(Debug, Clone, Default)]
pub struct Words(BTreeSet<Arc<str>>);

impl Words {
    /// The shared copy of `text`, made on first use.
    pub fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(word) = self.0.get(text) {
            return word.clone();
        }
        let word: Arc<str> = Arc::from(text);
        self.0.insert(word.clone());
        word
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_gets_the_same_copy() {
        let mut words = Words::default();
        let a = words.get("default");
        let b = words.get("default");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &words.get("kube-system")));
        assert_eq!(words.len(), 2);
    }
}
