/*
 * XPath contexts kept, per thread, from one transform to the next.
 *
 * Why: libxslt 1.1.35's xsltNewTransformContext asks libxml2 for a fresh
 * XPath context (xmlXPathNewContext: a 256-slot function table, zeroed,
 * then the 27 XPath core functions copied into it by name) and registers
 * XSLT's 10 functions in the same table; xsltFreeTransformContext frees it
 * all. callgrind on the trivial page's uncached three-stage render: 97k of
 * its 515k instructions (19%) were those two calls. nginx's XSLT filter pays
 * the same; this is where Axle does less.
 *
 * How: Axle makes and frees its transform contexts only through
 * shim_new_transform_context and shim_free_transform_context below. The
 * first arms a thread-local flag around xsltNewTransformContext; the
 * executable's xmlXPathNewContext (libxslt reaches it through its PLT, as
 * with xmlStrEqual in shim.c) hands an armed call a context from this
 * thread's pool and every other call libxml2's own (found with dlsym). The
 * second takes the XPath context back when it is exactly as a fresh one
 * would be after libxslt's set-up, and frees it otherwise.
 *
 * What "exactly as fresh" means, field by field (libxml2 2.9.14's
 * xmlXPathNewContext: memset 0, doc, funcHash, contextSize and
 * proximityPosition -1; no cache, XP_DEFAULT_CACHE_ON is not defined):
 * - the function table holds libxml2's core functions and libxslt's
 *   (xsltRegisterAllFunctions), and nothing else: a context whose table has
 *   any other size (func:function's registrations, a removal) is freed.
 *   xsltNewTransformContext registers XSLT's functions again; adding an
 *   existing name fails and changes nothing (xmlHashAddEntry2);
 * - the object cache stays: its objects are emptied when released into it
 *   (node sets with nodeNr 0, strings freed), so it refers to no document,
 *   and libxslt's xmlXPathContextSetCache(ctxt, 1, -1, 0) on an existing
 *   cache only sets the limits it would give a new one;
 * - every other field is zeroed, as xmlXPathNewContext does, after the
 *   error record is released (xmlResetError) and the namespace table
 *   detached (it is the stylesheet's; libxslt detaches it the same way);
 * - a context with registered variables (varHash), or from a transform
 *   that did not end in XSLT_STATE_OK (stopped by the watchdog, which sets
 *   its opLimit, or failed), is freed, not kept.
 * At most POOL_MAX contexts are kept per thread (nested `axle:` renders
 * hold one each); a thread's pool is freed when the thread exits.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/hash.h>
#include <libxml/xmlerror.h>
#include <libxml/xpath.h>
#include <libxslt/extensions.h>
#include <libxslt/functions.h>
#include <libxslt/transform.h>
#include <libxslt/xsltInternals.h>

#define POOL_MAX 8

typedef xmlXPathContextPtr (*new_context_fn)(xmlDocPtr);

struct pool {
    int n;
    xmlXPathContextPtr ctxt[POOL_MAX];
};

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
/* libxml2's xmlXPathNewContext; NULL when it could not be found. */
static new_context_fn libxml_new_context;
/* Entries in a fresh transform's function table. */
static int fresh_functions = -1;
static pthread_key_t pool_key;
static int pool_key_ok;

static __thread struct pool *this_pool;
static __thread int armed;
static __thread uint64_t reused;

static void free_pool(void *p) {
    struct pool *pool = p;
    int i;
    for (i = 0; i < pool->n; i++) xmlXPathFreeContext(pool->ctxt[i]);
    free(pool);
}

static void pool_init(void) {
    void *f = dlsym(RTLD_NEXT, "xmlXPathNewContext");
    if (f == NULL) {
        void *lib = dlopen("libxml2.so.2", RTLD_NOW | RTLD_NOLOAD);
        if (lib != NULL) f = dlsym(lib, "xmlXPathNewContext");
    }
    if (f == NULL || f == (void *)xmlXPathNewContext) return;
    libxml_new_context = (new_context_fn)f;
    xmlXPathContextPtr probe = libxml_new_context(NULL);
    if (probe == NULL) return;
    xsltRegisterAllFunctions(probe);
    fresh_functions = xmlHashSize(probe->funcHash);
    xmlXPathFreeContext(probe);
    pool_key_ok = pthread_key_create(&pool_key, free_pool) == 0;
}

/* 1 when libxml2's xmlXPathNewContext was found (the executable's
 * definition below can make contexts at all). Called by ffi::init. */
int shim_xpath_pool_init(void) {
    pthread_once(&pool_once, pool_init);
    return libxml_new_context != NULL && fresh_functions > 0;
}

/* 1 when the dynamic linker resolves xmlXPathNewContext to the definition
 * below (so libxslt's calls arrive here), 0 when to libxml2's. */
int shim_xpath_pool_is_ours(void) {
    return dlsym(RTLD_DEFAULT, "xmlXPathNewContext") == (void *)xmlXPathNewContext;
}

/* How many transforms on this thread were given a kept context. */
uint64_t shim_xpath_pool_reused(void) { return reused; }

xmlXPathContextPtr xmlXPathNewContext(xmlDocPtr doc) {
    pthread_once(&pool_once, pool_init);
    if (armed) {
        armed = 0;
        struct pool *pool = this_pool;
        if (pool != NULL && pool->n > 0) {
            xmlXPathContextPtr c = pool->ctxt[--pool->n];
            c->doc = doc;
            reused++;
            return c;
        }
    }
    if (libxml_new_context == NULL) return NULL;
    return libxml_new_context(doc);
}

/* Resets `x` to a fresh context's state and keeps it; 0 when it cannot be
 * kept (the caller frees it). */
static int keep(xmlXPathContextPtr x) {
    if (x->varHash != NULL || x->funcHash == NULL || fresh_functions <= 0 ||
        xmlHashSize(x->funcHash) != fresh_functions || !pool_key_ok)
        return 0;
    struct pool *pool = this_pool;
    if (pool == NULL) {
        pool = calloc(1, sizeof *pool);
        if (pool == NULL) return 0;
        if (pthread_setspecific(pool_key, pool) != 0) {
            free(pool);
            return 0;
        }
        this_pool = pool;
    }
    if (pool->n >= POOL_MAX) return 0;
    xmlResetError(&x->lastError);
    xmlHashTablePtr functions = x->funcHash;
    void *cache = x->cache;
    memset(x, 0, sizeof *x);
    x->funcHash = functions;
    x->cache = cache;
    x->contextSize = -1;
    x->proximityPosition = -1;
    pool->ctxt[pool->n++] = x;
    return 1;
}

/* xsltNewTransformContext, with a kept XPath context when this thread has
 * one. */
xsltTransformContextPtr shim_new_transform_context(xsltStylesheetPtr style, xmlDocPtr doc) {
    armed = 1;
    xsltTransformContextPtr c = xsltNewTransformContext(style, doc);
    armed = 0;
    return c;
}

/* xsltFreeTransformContext, keeping the XPath context when it can be. The
 * extension modules are shut down first, with the context attached, as
 * xsltFreeTransformContext would (a second shutdown does nothing). */
void shim_free_transform_context(xsltTransformContextPtr c) {
    if (c == NULL) return;
    xsltShutdownCtxtExts(c);
    xmlXPathContextPtr x = c->xpathCtxt;
    int ok = c->state == XSLT_STATE_OK;
    c->xpathCtxt = NULL;
    xsltFreeTransformContext(c);
    if (x == NULL) return;
    x->nsHash = NULL; /* the stylesheet's */
    if (!ok || !keep(x)) xmlXPathFreeContext(x);
}
