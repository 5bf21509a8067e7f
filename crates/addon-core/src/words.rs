//! One shared copy of each small value that many records repeat (a record's namespace, kind and
//! `apiVersion`): a record holds an `Arc` to it instead of its own copy.

use std::collections::BTreeSet;
use std::sync::Arc;

/// The shared copies handed out so far.
#[derive(Debug, Clone)]
pub struct Words<T>(BTreeSet<Arc<T>>);

impl<T> Default for Words<T> {
    fn default() -> Self {
        Self(BTreeSet::new())
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

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
