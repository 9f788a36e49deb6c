//! Key derivation: what each cache key covers. The hot-memo key of a
//! request, the all-or-nothing response key (`all` mode, and the response
//! in `incremental`), and the per-stage keys over a stage's input hash that
//! give incremental mode its early cut-off. One place to audit that a key
//! covers everything an output depends on.

use crate::cache::{ContentHash, FieldKey, FieldKeyBuilder, Key, KeyBuilder};
use crate::chain::Selection;

use super::Pipeline;
use super::job::ChainJob;

impl Pipeline {
    /// The hot-memo key of a request for `url_path` (as requested), from
    /// the parts of its render request that it covers (so a hit need not
    /// build the whole [`RenderRequest`](super::RenderRequest)).
    pub fn hot_key(
        url_path: &str,
        location: Option<ContentHash>,
        selection: &Selection,
        client_style: bool,
        xinclude: bool,
        params: &[(String, String)],
    ) -> FieldKey {
        let mut k = FieldKeyBuilder::new("hot");
        k.str(url_path)
            .hash(&location.unwrap_or_else(|| ContentHash::of(b"")))
            .str(selection.style.as_deref().unwrap_or("\0"))
            .str(&selection.media)
            .u64(u64::from(client_style))
            .u64(u64::from(xinclude))
            .u64(params.len() as u64);
        for (name, value) in params {
            k.str(name).str(value);
        }
        k.finish()
    }
}

/// A stage's `Stage::varies` bytes (with their presence and length, so
/// no two stages' parts run together).
fn add_varies(key: &mut KeyBuilder, varies: Option<&[u8]>) {
    match varies {
        Some(bytes) => {
            key.u64(1).u64(bytes.len() as u64).bytes(bytes);
        }
        None => {
            key.u64(0);
        }
    }
}

impl ChainJob {
    /// What every key of this job covers besides the stages and their
    /// input: the location, XInclude and the sort order (one number: a
    /// job without the Unicode sort keys as before it existed), the
    /// params, and the document's URL.
    /// The URL is the base URI of the source and of every intermediate
    /// tree, so it can change any stage's output (`document('x.xml', /)`,
    /// relative entities and XIncludes): identical bytes at two URLs are
    /// two documents.
    fn add_params(&self, key: &mut KeyBuilder) {
        key.str(&self.base_url);
        key.hash(&self.location.unwrap_or_else(|| ContentHash::of(b"")))
            .u64(u64::from(self.xinclude) | (u64::from(self.unicode_sort) << 1));
        key.u64(self.params.len() as u64);
        for (name, value) in self.params.iter() {
            key.str(name).str(value);
        }
    }

    /// All-or-nothing: one key over the whole chain.
    pub(super) fn response_key(&self, source: ContentHash) -> Key {
        let mut key = KeyBuilder::new("response");
        key.hash(&source).u64(self.stages.len() as u64);
        for (stage, varies) in self.stages.iter().zip(self.varies.iter()) {
            key.hash(&stage.closure);
            add_varies(&mut key, varies.as_deref());
        }
        self.add_params(&mut key);
        key.finish()
    }

    /// Incremental: stage `index` over the hash of its input bytes.
    pub(super) fn stage_key(&self, index: usize, input: ContentHash) -> Key {
        let mut key = KeyBuilder::new("stage");
        key.hash(&self.stages[index].closure)
            .u64(u64::from(index + 1 == self.stages.len()))
            .hash(&input);
        add_varies(&mut key, self.varies.get(index).and_then(|v| v.as_deref()));
        self.add_params(&mut key);
        key.finish()
    }
}
