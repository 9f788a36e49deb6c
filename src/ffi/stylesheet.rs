//! [`Stylesheet`]: a compiled XSLT stylesheet shared by every transform,
//! and the pool of compiled instances behind it (each transform leases one
//! for itself, as libxslt writes into a compiled stylesheet while it runs).
//! Further instances are compiled from a [`Recipe`]: exactly the bytes the
//! first compile read.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::errors::{begin, take_messages};
use super::resolve::ResolverGuard;
use super::{Loaded, Resolver, XmlDoc, XmlError, c_string, opt_string, sys};

/// A stylesheet's `xsl:output` settings, resolved across imports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputSettings {
    /// `method` (`xml`, `html`, `text`, or a QName), if set.
    pub method: Option<String>,
    /// `media-type`, if set.
    pub media_type: Option<String>,
    /// `encoding`, if set.
    pub encoding: Option<String>,
}

/// Compiled instances alive, over every stylesheet.
static LIVE_INSTANCES: AtomicUsize = AtomicUsize::new(0);

/// A compiled XSLT stylesheet, compiled once from one set of bytes and
/// shared by every transform.
///
/// libxslt documents a compiled stylesheet as shareable between concurrent
/// transforms, but with the system libraries (libxml2 2.9.14, libxslt
/// 1.1.35) a transform writes into it:
/// - libxml2's XPath evaluator reorders the two branches of a union
///   (`xmlXPathCompSwap`, after `if (total > cur)` in `xmlXPathCompOpEval`
///   and the first/last variants) in the shared compiled expression. Its
///   guard is compiled out in thread-enabled builds. A concurrent
///   evaluation that reads the branches between two swaps evaluates one
///   branch twice and the other not at all: DocBook's
///   `(ancestor::section|…|ancestor::sect5)[last()]` then picks a
///   section's parent, and the page shows the parent's title.
/// - `xsl:sort` whose `data-type`, `order` or `lang` is an attribute value
///   template stores the evaluated value in the shared instruction and
///   frees it after sorting (`xsltDefaultSortFunction`).
///
/// So each transform uses one compiled *instance* by itself: an idle one
/// when there is one, otherwise a new one compiled from exactly the bytes
/// the first compile read (kept in a `Recipe`). Instances grow to the
/// largest number of transforms of this stylesheet that ran at once, which
/// the transform pool's size bounds, and are reused from then on.
#[derive(Debug)]
pub struct Stylesheet {
    /// Instances no transform is using.
    idle: Mutex<Vec<Arc<Compiled>>>,
    /// Signalled when an instance goes back to `idle`.
    returned: Condvar,
    /// How the first instance was compiled, to compile more.
    recipe: Recipe,
    /// Set when compiling another instance failed; from then on a transform
    /// waits for an idle instance instead.
    no_more: AtomicBool,
    /// Instances compiled, idle or in use.
    instances: AtomicUsize,
    output: OutputSettings,
}

/// One compiled instance: libxslt's `xsltStylesheet`, with its document.
#[derive(Debug)]
pub(super) struct Compiled(pub(super) NonNull<sys::xsltStylesheet>);

// SAFETY: a compiled stylesheet is a self-contained heap structure owned by
// this value. A transform writes into it (see `Stylesheet`), so a transform
// uses an instance only while it holds the instance's `Lease`, which no
// other transform can hold at the same time. Every other use (reading the
// `xsl:output` settings, serializing a result) reads fields that no
// transform writes.
unsafe impl Send for Compiled {}
// SAFETY: see Send.
unsafe impl Sync for Compiled {}

impl Drop for Compiled {
    fn drop(&mut self) {
        // SAFETY: we own the stylesheet (and, through it, its document); no
        // lease or result refers to it any more (they hold an Arc).
        unsafe { sys::xsltFreeStylesheet(self.0.as_ptr()) };
    }
}

/// What the first compile of a stylesheet read: its bytes and every file
/// loaded while compiling it (imports, includes, DTDs, entities), so a
/// further instance is compiled from exactly the same bytes even if the
/// files have changed since. (A changed file is a new stylesheet for the
/// caches above, compiled afresh.)
#[derive(Debug)]
struct Recipe {
    bytes: Vec<u8>,
    url: String,
    /// The ID of an embedded stylesheet (`href="#id"`).
    id: Option<String>,
    /// `(requested URL, what the resolver gave)`, in the order read.
    loads: Arc<Vec<(String, Loaded)>>,
}

/// Passes loads on to the caller's resolver, and keeps a copy of each for
/// the [`Recipe`].
struct Recorder {
    inner: Arc<dyn Resolver>,
    loads: Mutex<Vec<(String, Loaded)>>,
}

impl Resolver for Recorder {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        let loaded = self.inner.load(url)?;
        self.loads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((url.to_string(), loaded.clone()));
        Ok(loaded)
    }
}

/// Answers loads from a [`Recipe`]: what the first compile was given.
struct Replay(Arc<Vec<(String, Loaded)>>);

impl Resolver for Replay {
    fn load(&self, url: &str) -> Result<Loaded, String> {
        self.0
            .iter()
            .find(|(asked, _)| asked == url)
            .map(|(_, loaded)| loaded.clone())
            .ok_or_else(|| format!("{url} was not read when the stylesheet was first compiled"))
    }
}

impl Recipe {
    /// Compiles one instance; every load goes to `resolver`.
    fn compile(&self, resolver: Arc<dyn Resolver>) -> Result<Compiled, XmlError> {
        match &self.id {
            None => compile_document(&self.bytes, &self.url, resolver),
            Some(id) => compile_embedded(&self.bytes, &self.url, id, resolver),
        }
    }
}

fn compile_document(
    bytes: &[u8],
    url: &str,
    resolver: Arc<dyn Resolver>,
) -> Result<Compiled, XmlError> {
    let doc = XmlDoc::parse(bytes, url, resolver.clone())?;
    begin();
    let _guard = ResolverGuard::install(resolver);
    let raw = doc.into_raw();
    // SAFETY: `raw` is a live document we own. On success the stylesheet
    // owns it; on NULL it stays ours and is freed below.
    let style = unsafe { sys::xsltParseStylesheetDoc(raw) };
    // SAFETY: a non-NULL stylesheet is live; reading its error count.
    if !style.is_null() && unsafe { sys::shim_style_errors(style) } != 0 {
        // SAFETY: libxslt returned a stylesheet that counted errors (as
        // xsltproc, we refuse it); freeing it frees its document too.
        unsafe { sys::xsltFreeStylesheet(style) };
        return Err(XmlError::Compile(take_messages()));
    }
    let Some(ptr) = NonNull::new(style) else {
        // SAFETY: compilation failed, so the document is still ours.
        unsafe { sys::xmlFreeDoc(raw) };
        let msg = take_messages();
        return Err(XmlError::Compile(if msg.is_empty() {
            format!("{url} is not an XSLT stylesheet")
        } else {
            msg
        }));
    };
    let warnings = take_messages();
    if !warnings.is_empty() {
        tracing::debug!(stylesheet = url, %warnings, "stylesheet compiled with messages");
    }
    Ok(Compiled(ptr))
}

fn compile_embedded(
    bytes: &[u8],
    url: &str,
    id: &str,
    resolver: Arc<dyn Resolver>,
) -> Result<Compiled, XmlError> {
    let doc = XmlDoc::parse(bytes, url, resolver.clone())?;
    let c_id = c_string(id, "stylesheet id")?;
    begin();
    let _guard = ResolverGuard::install(resolver);
    // SAFETY: `doc` is a live document we own and keep until after the
    // call; the shim copies the subtree into a new document that the
    // returned stylesheet owns (or frees it on failure).
    let style = unsafe { sys::shim_embedded_stylesheet(doc.ptr.as_ptr(), c_id.as_ptr()) };
    drop(doc);
    let Some(ptr) = NonNull::new(style) else {
        let msg = take_messages();
        return Err(XmlError::Compile(if msg.is_empty() {
            format!("no stylesheet with ID '{id}' in {url}")
        } else {
            msg
        }));
    };
    Ok(Compiled(ptr))
}

impl Stylesheet {
    /// Compiles the stylesheet in `bytes` whose URL (absolute path) is `url`.
    /// Imports, includes, DTDs and entities are read through `resolver`.
    pub fn compile(
        bytes: &[u8],
        url: &str,
        resolver: Arc<dyn Resolver>,
    ) -> Result<Stylesheet, XmlError> {
        Stylesheet::first(bytes, url, None, resolver)
    }

    /// Compiles the stylesheet embedded in the document `bytes` (at `url`)
    /// as the element whose ID is `id` (XSLT 1.0 section 2.7,
    /// `<?xml-stylesheet href="#id"?>`), as libxslt's `xsltLoadStylesheetPI`
    /// does: the element must be declared an ID (DTD or `xml:id`).
    pub fn compile_embedded(
        bytes: &[u8],
        url: &str,
        id: &str,
        resolver: Arc<dyn Resolver>,
    ) -> Result<Stylesheet, XmlError> {
        Stylesheet::first(bytes, url, Some(id), resolver)
    }

    /// Compiles the first instance, recording what it read.
    fn first(
        bytes: &[u8],
        url: &str,
        id: Option<&str>,
        resolver: Arc<dyn Resolver>,
    ) -> Result<Stylesheet, XmlError> {
        let recorder = Arc::new(Recorder {
            inner: resolver,
            loads: Mutex::new(Vec::new()),
        });
        let mut recipe = Recipe {
            bytes: bytes.to_vec(),
            url: url.to_string(),
            id: id.map(str::to_string),
            loads: Arc::new(Vec::new()),
        };
        let compiled = recipe.compile(recorder.clone())?;
        recipe.loads = Arc::new(std::mem::take(
            &mut *recorder
                .loads
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ));
        let ptr = compiled.0.as_ptr();
        // SAFETY: the stylesheet is live; the returned strings belong to it
        // (or its imports) and are copied immediately.
        let output = unsafe {
            OutputSettings {
                method: opt_string(sys::shim_out_method(ptr)),
                media_type: opt_string(sys::shim_out_media_type(ptr)),
                encoding: opt_string(sys::shim_out_encoding(ptr)),
            }
        };
        LIVE_INSTANCES.fetch_add(1, Ordering::Relaxed);
        Ok(Stylesheet {
            idle: Mutex::new(vec![Arc::new(compiled)]),
            returned: Condvar::new(),
            recipe,
            no_more: AtomicBool::new(false),
            instances: AtomicUsize::new(1),
            output,
        })
    }

    /// The stylesheet's `xsl:output` settings.
    pub fn output(&self) -> &OutputSettings {
        &self.output
    }

    /// Compiled instances of every stylesheet alive in the process (the
    /// metrics' `axle_stylesheet_instances`).
    pub fn live_instances() -> usize {
        LIVE_INSTANCES.load(Ordering::Relaxed)
    }

    /// How many compiled instances exist (see [`Stylesheet`]).
    pub fn instances(&self) -> usize {
        self.instances.load(Ordering::Relaxed)
    }

    /// An instance for one transform, used by nothing else until the lease
    /// drops: an idle one, else a newly compiled one. A transform nested in
    /// another on this thread (an `axle:` document rendered through this
    /// stylesheet) never waits, as the instance it would wait for is its
    /// caller's.
    pub(super) fn lease(&self) -> Result<Lease<'_>, XmlError> {
        let nested = RUNNING_HERE.with(|held| held.borrow().contains(&self.key()));
        let mut idle = self.idle();
        loop {
            if let Some(compiled) = idle.pop() {
                return Ok(Lease::new(self, compiled));
            }
            if nested || !self.no_more.load(Ordering::Acquire) {
                drop(idle);
                match self.compile_another() {
                    Ok(compiled) => return Ok(Lease::new(self, Arc::new(compiled))),
                    Err(e) if nested => {
                        return Err(XmlError::Transform(format!(
                            "a nested render through {} needs a second compiled instance, and compiling it failed: {e}",
                            self.recipe.url
                        )));
                    }
                    Err(_) => idle = self.idle(),
                }
                continue;
            }
            idle = self
                .returned
                .wait(idle)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Compiles one more instance from the recipe; on failure, marks that
    /// no more will be tried (transforms then wait for an idle one).
    fn compile_another(&self) -> Result<Compiled, XmlError> {
        let replay: Arc<dyn Resolver> = Arc::new(Replay(Arc::clone(&self.recipe.loads)));
        match self.recipe.compile(replay) {
            Ok(compiled) => {
                let n = self.instances.fetch_add(1, Ordering::Relaxed) + 1;
                LIVE_INSTANCES.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(stylesheet = %self.recipe.url, instances = n, "compiled another instance");
                Ok(compiled)
            }
            Err(e) => {
                self.no_more.store(true, Ordering::Release);
                tracing::warn!(stylesheet = %self.recipe.url, error = %e,
                    "could not compile another instance: its transforms now take turns");
                Err(e)
            }
        }
    }

    /// The idle instances. A poisoned lock only means a thread panicked
    /// while pushing or popping; the list itself is whole.
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Compiled>>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// This stylesheet's mark in `RUNNING_HERE`.
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }
}

/// One transform's exclusive use of a compiled instance; gives it back
/// (and wakes a waiting transform) when dropped.
pub(super) struct Lease<'a> {
    style: &'a Stylesheet,
    pub(super) compiled: Arc<Compiled>,
    _here: RunningHere,
    /// False once the instance must not be reused.
    keep: bool,
}

impl<'a> Lease<'a> {
    fn new(style: &'a Stylesheet, compiled: Arc<Compiled>) -> Lease<'a> {
        Lease {
            style,
            compiled,
            _here: RunningHere::enter(style.key()),
            keep: true,
        }
    }

    /// Drops the instance instead of giving it back: a transform stopped
    /// from outside may have left its per-transform state half-written.
    /// A transform that needs an instance later compiles a new one.
    pub(super) fn discard(mut self) {
        self.keep = false;
        self.style.instances.fetch_sub(1, Ordering::Relaxed);
        LIVE_INSTANCES.fetch_sub(1, Ordering::Relaxed);
        self.style.no_more.store(false, Ordering::Release);
        // Under the lock a waiter holds while it decides to wait, so it
        // cannot miss the wake-up.
        let _idle = self.style.idle();
        self.style.returned.notify_all();
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if self.keep {
            self.style.idle().push(Arc::clone(&self.compiled));
            self.style.returned.notify_one();
        }
    }
}

thread_local! {
    /// Stylesheets (by address) of which this thread holds an instance.
    static RUNNING_HERE: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// This thread's mark that it holds an instance of a stylesheet, removed
/// when dropped.
struct RunningHere(usize);

impl RunningHere {
    fn enter(key: usize) -> RunningHere {
        RUNNING_HERE.with(|held| held.borrow_mut().push(key));
        RunningHere(key)
    }
}

impl Drop for RunningHere {
    fn drop(&mut self) {
        RUNNING_HERE.with(|held| {
            let mut held = held.borrow_mut();
            if let Some(i) = held.iter().rposition(|k| *k == self.0) {
                held.remove(i);
            }
        });
    }
}

impl Drop for Stylesheet {
    fn drop(&mut self) {
        LIVE_INSTANCES.fetch_sub(self.instances.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}
