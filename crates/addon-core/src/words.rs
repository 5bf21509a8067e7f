//! One shared copy of each short value that many records repeat (namespaces, kinds,
//! `apiVersion`s, or a record's whole place): a record holds an `Arc` to it instead of its own copy.

use std::collections::BTreeSet;
use std::sync::Arc;

/// The shared copies handed out so far (of strings unless told otherwise).
#[derive(Debug)]
pub struct Words<T: ?Sized = str>(BTreeSet<Arc<T>>);

impl<T: ?Sized> Default for Words<T> {
    fn default() -> Self {
        Self(BTreeSet::new())
    }
}

impl<T: ?Sized> Clone for Words<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

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
}

impl<T: Ord> Words<T> {
    /// The shared copy of `value`, made on first use.
    pub fn share(&mut self, value: T) -> Arc<T> {
        if let Some(word) = self.0.get(&value) {
            return word.clone();
        }
        let word = Arc::new(value);
        self.0.insert(word.clone());
        word
    }
}

impl<T: ?Sized> Words<T> {
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

    #[test]
    fn equal_values_get_the_same_copy() {
        let mut places: Words<(String, String)> = Words::default();
        let a = places.share(("ns".to_string(), "Pod".to_string()));
        let b = places.share(("ns".to_string(), "Pod".to_string()));
        let c = places.share(("ns".to_string(), "Job".to_string()));
        assert!(Arc::ptr_eq(&a, &b) && !Arc::ptr_eq(&a, &c));
        assert_eq!(places.len(), 2);
    }
}
