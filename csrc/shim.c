/*
 * The C side of Axle's libxml2/libxslt binding (see src/ffi/).
 *
 * Why C at all: libxml2 and libxslt report errors through variadic callbacks
 * that stable Rust cannot define, and several settings live in struct fields.
 * Keeping the field accesses here means no libxml2/libxslt struct layout is
 * mirrored in Rust; only opaque pointers cross the boundary.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <libxml/globals.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/valid.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>
#include <libxml/xmlIO.h>
#include <libxml/xpath.h>
#include <libxslt/xsltInternals.h>
#include <libxslt/transform.h>
#include <libxslt/xsltutils.h>
#include <libxslt/imports.h>
#include <libxslt/extensions.h>
#include <libxslt/extra.h>

/* Implemented in Rust (src/ffi/mod.rs): append to the current thread's buffer. */
extern void axle_error_sink(const char *msg);
extern void axle_structured_sink(const char *msg, const char *file, int line, int level,
                                 int domain, const char *str1, int int1, int int2);

static void shim_error(void *ctx, const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    (void)ctx;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    axle_error_sink(buf);
}

/* libxslt's generic handler is process-global: set once at init. */
void shim_install_xslt_error(void) { xsltSetGenericErrorFunc(NULL, shim_error); }

/* libxml2's structured errors carry file and line; they arrive even when a
   parser runs with XML_PARSE_NOERROR (which only silences printing). The
   domain and the extra fields say more: a parser's column (int2), an XPath
   error's expression (str1) and offset in it (int1). */
static void shim_structured(void *ctx, xmlErrorPtr e) {
    (void)ctx;
    if (e == NULL) return;
    axle_structured_sink(e->message, e->file, e->line, (int)e->level,
                         e->domain, e->str1, e->int1, e->int2);
}

/* libxml2's handlers are per thread: set once on each thread that parses. */
void shim_install_xml_error_for_thread(void) {
    xmlSetGenericErrorFunc(NULL, shim_error);
    xmlSetStructuredErrorFunc(NULL, shim_structured);
}

/* Compilation errors libxslt counted without failing (xsltproc checks this too). */
int shim_style_errors(xsltStylesheetPtr s) { return s->errors; }

void shim_set_transform_error(xsltTransformContextPtr c) { xsltSetTransformErrorFunc(c, NULL, shim_error); }

void shim_ctxt_limits(xsltTransformContextPtr c, int max_depth, int max_vars,
                      unsigned long op_limit, unsigned long xpath_op_limit) {
    if (max_depth > 0) c->maxTemplateDepth = max_depth;
    if (max_vars > 0) c->maxTemplateVars = max_vars;
    c->opLimit = op_limit;
    if (c->xpathCtxt != NULL) c->xpathCtxt->opLimit = xpath_op_limit;
}

int shim_ctxt_state(xsltTransformContextPtr c) { return (int)c->state; }

/*
 * Asks a running transform to stop at its next check: libxslt tests the
 * context's state between instructions and its op limit per instruction;
 * libxml2 tests the XPath op limit per op. Called by Axle's watchdog thread
 * while the transform runs on another thread (src/ffi/budget.rs): plain
 * aligned word stores, made volatile so they are not elided; the running
 * thread sees them at a later check.
 */
void shim_ctxt_stop(xsltTransformContextPtr c) {
    *(volatile xsltTransformState *)&c->state = XSLT_STATE_STOPPED;
    *(volatile unsigned long *)&c->opLimit = 1;
    if (c->xpathCtxt != NULL) *(volatile unsigned long *)&c->xpathCtxt->opLimit = 1;
}

/* Process XInclude in documents that document() loads (xsltproc --xinclude). */
void shim_ctxt_xinclude(xsltTransformContextPtr c, int on) { c->xinclude = on; }

/* The stylesheet's xsl:output settings, resolved across xsl:import precedence. */
const xmlChar *shim_out_method(xsltStylesheetPtr s) { const xmlChar *v; XSLT_GET_IMPORT_PTR(v, s, method) return v; }
const xmlChar *shim_out_media_type(xsltStylesheetPtr s) { const xmlChar *v; XSLT_GET_IMPORT_PTR(v, s, mediaType) return v; }
const xmlChar *shim_out_encoding(xsltStylesheetPtr s) { const xmlChar *v; XSLT_GET_IMPORT_PTR(v, s, encoding) return v; }

/* 13 = XML_HTML_DOCUMENT_NODE: libxslt chose (implicit) html output. */
int shim_doc_type(xmlDocPtr d) { return (int)d->type; }

/* Sets the document's URL (its base URI for relative document() and entities). */
void shim_set_doc_url(xmlDocPtr d, const char *url) {
    if (d->URL != NULL) xmlFree((void *)d->URL);
    d->URL = url != NULL ? xmlStrdup((const xmlChar *)url) : NULL;
}

/*
 * Text written with disable-output-escaping, in an intermediate stage's
 * output, is serialized escaped between the JAXP processing instructions
 * that say so, and restored (as libxslt's "noenc" text) when the next stage
 * parses that output: the hand-off through bytes then gives the next stage
 * exactly the tree a hand-off through the tree would (libxslt keeps the
 * flag when it copies such text), instead of bytes that do not parse
 * (DocBook writes &nbsp; this way).
 */
#define AXLE_DOE_OFF (const xmlChar *)"javax.xml.transform.disable-output-escaping"
#define AXLE_DOE_ON (const xmlChar *)"javax.xml.transform.enable-output-escaping"

/* Next node in document order within d's root element content (elements'
   children first), or NULL. */
static xmlNodePtr next_in_content(xmlNodePtr cur) {
    if (cur->type == XML_ELEMENT_NODE && cur->children != NULL) return cur->children;
    while (cur != NULL && cur->next == NULL) {
        cur = cur->parent;
        if (cur == NULL || cur->type == XML_DOCUMENT_NODE ||
            cur->type == XML_HTML_DOCUMENT_NODE) return NULL;
    }
    return cur == NULL ? NULL : cur->next;
}

/* Marks each non-empty noenc text node (mark = 1) by wrapping it in the
   two PIs and making it ordinary text, or (mark = 0) turns every text node
   so wrapped into noenc text and drops the PIs: the reading a parse of the
   marked bytes gets (a pair the stylesheet wrote itself reads the same).
   Returns -1 when a node cannot be allocated (the tree is then restored). */
static int doe_marks(xmlDocPtr d, int mark) {
    xmlNodePtr cur = d->children, next;
    while (cur != NULL) {
        next = next_in_content(cur);
        if (mark && cur->type == XML_TEXT_NODE && cur->name == xmlStringTextNoenc &&
            cur->content != NULL && cur->content[0] != 0 && cur->parent != NULL) {
            xmlNodePtr off = xmlNewDocPI(d, AXLE_DOE_OFF, NULL);
            xmlNodePtr on = xmlNewDocPI(d, AXLE_DOE_ON, NULL);
            if (off == NULL || on == NULL) {
                xmlFreeNode(off);
                xmlFreeNode(on);
                doe_marks(d, 0);
                return -1;
            }
            /* Linked by hand: xmlAddPrevSibling/NextSibling never merge a PI,
               but setting the links directly keeps the text node as it is. */
            off->parent = on->parent = cur->parent;
            off->prev = cur->prev;
            off->next = cur;
            if (cur->prev != NULL) cur->prev->next = off; else cur->parent->children = off;
            cur->prev = off;
            on->next = cur->next;
            on->prev = cur;
            if (cur->next != NULL) cur->next->prev = on; else cur->parent->last = on;
            cur->next = on;
            cur->name = xmlStringText;
            next = on->next != NULL ? on->next : next_in_content(on);
        } else if (!mark && cur->type == XML_PI_NODE && xmlStrEqual(cur->name, AXLE_DOE_OFF) &&
                   cur->next != NULL && cur->next->type == XML_TEXT_NODE &&
                   cur->next->next != NULL && cur->next->next->type == XML_PI_NODE &&
                   xmlStrEqual(cur->next->next->name, AXLE_DOE_ON)) {
            xmlNodePtr text = cur->next, on = text->next;
            text->name = xmlStringTextNoenc;
            next = on->next != NULL ? on->next : next_in_content(on);
            xmlUnlinkNode(cur);
            xmlFreeNode(cur);
            xmlUnlinkNode(on);
            xmlFreeNode(on);
        }
        cur = next;
    }
    return 0;
}

/* After parsing an intermediate stage's output: restores noenc text. */
void shim_restore_doe(xmlDocPtr d) { doe_marks(d, 0); }

/* Does any byte of `v` equal `b`? (No false positives: the classic
   zero-byte test on v XOR b repeated.) */
static inline int has_byte(uint64_t v, unsigned char b) {
    uint64_t x = v ^ (0x0101010101010101ULL * b);
    return ((x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL) != 0;
}

/*
 * Text-content escaping for shim_dump_xml: exactly libxml2's default
 * (xmlEscapeContent: `<` `>` `&` and CR become &lt; &gt; &amp; &#13;,
 * every other byte is copied), with the same contract (stop when `out` is
 * full, an escape is never split; never reads past `inlen`), but copying
 * runs of ordinary bytes at a time. The byte-at-a-time default was about
 * 60% of serializing an intermediate (callgrind), which incremental
 * caching does for every stage output.
 */
static int shim_escape_content(unsigned char *out, int *outlen,
                               const xmlChar *in, int *inlen) {
    unsigned char *o = out;
    unsigned char *oend = out + *outlen;
    const xmlChar *i = in;
    const xmlChar *iend = in + *inlen;
    while (i < iend && o < oend) {
        const xmlChar *run = i;
        size_t room = (size_t)(oend - o);
        size_t left = (size_t)(iend - i);
        const xmlChar *stop = i + (left < room ? left : room);
        const char *rep;
        int n;
        /* eight bytes at a time while none of them needs escaping */
        while (stop - i >= 8) {
            uint64_t v;
            memcpy(&v, i, 8);
            if (has_byte(v, '<') || has_byte(v, '>') || has_byte(v, '&') ||
                has_byte(v, '\r'))
                break;
            i += 8;
        }
        while (i < stop && *i != '<' && *i != '>' && *i != '&' && *i != '\r') i++;
        if (i > run) {
            memcpy(o, run, (size_t)(i - run));
            o += i - run;
            continue;
        }
        switch (*i) {
        case '<': rep = "&lt;"; n = 4; break;
        case '>': rep = "&gt;"; n = 4; break;
        case '&': rep = "&amp;"; n = 5; break;
        default: rep = "&#13;"; n = 5; break;
        }
        if (oend - o < n) break;
        memcpy(o, rep, (size_t)n);
        o += n;
        i++;
    }
    *outlen = (int)(o - out);
    *inlen = (int)(i - in);
    return 0;
}

/*
 * Serializes a document as plain XML in UTF-8 (even an HTML-typed result),
 * the canonical form of an intermediate stage's output (noenc text marked,
 * see doe_marks; afterwards the tree reads as the next stage will parse it,
 * which is as it was unless the stylesheet wrote such PIs itself). Returns 0
 * on success; *out is malloc'ed by libxml2 (free with xmlFree).
 */
int shim_dump_xml(xmlDocPtr d, xmlChar **out, int *len) {
    xmlBufferPtr buf = xmlBufferCreate();
    xmlSaveCtxtPtr save;
    int rc;
    *out = NULL;
    *len = 0;
    if (buf == NULL) return -1;
    if (doe_marks(d, 1) < 0) { xmlBufferFree(buf); return -1; }
    save = xmlSaveToBuffer(buf, "UTF-8", XML_SAVE_AS_XML);
    if (save == NULL) { doe_marks(d, 0); xmlBufferFree(buf); return -1; }
    xmlSaveSetEscape(save, shim_escape_content);
    rc = xmlSaveDoc(save, d) < 0 ? -1 : 0;
    if (xmlSaveClose(save) < 0) rc = -1;
    doe_marks(d, 0);
    if (rc == 0) {
        *len = (int)xmlBufferLength(buf);
        *out = xmlStrndup(xmlBufferContent(buf), *len);
        if (*out == NULL) rc = -1;
    }
    xmlBufferFree(buf);
    return rc;
}

/*
 * Is the tree exactly what re-parsing its XML serialization would give?
 * Only then may it be handed to the next stage as a tree; otherwise the
 * pipeline serializes and re-parses, so the hand-off never changes bytes.
 * Not faithful: an HTML-typed document; text or no element at the top level;
 * text written with disable-output-escaping; adjacent or empty text nodes;
 * entity references; CDATA sections; a PI with either name doe_marks uses
 * (re-parsing turns a text node between such a pair into unescaped text,
 * so a stage that writes the pair itself reads differently as bytes).
 */
int shim_doc_is_faithful(xmlDocPtr d) {
    xmlNodePtr cur;
    int elements = 0;
    if (d->type != XML_DOCUMENT_NODE) return 0;
    for (cur = d->children; cur != NULL; cur = cur->next) {
        if (cur->type == XML_ELEMENT_NODE) elements++;
        else if (cur->type != XML_COMMENT_NODE && cur->type != XML_PI_NODE &&
                 cur->type != XML_DTD_NODE) return 0;
    }
    if (elements != 1) return 0;
    cur = xmlDocGetRootElement(d);
    while (cur != NULL) {
        switch (cur->type) {
        case XML_TEXT_NODE:
            if (cur->name == xmlStringTextNoenc) return 0;
            if (cur->content == NULL || cur->content[0] == 0) return 0;
            if (cur->next != NULL && cur->next->type == XML_TEXT_NODE) return 0;
            break;
        case XML_CDATA_SECTION_NODE:
        case XML_ENTITY_REF_NODE:
        case XML_XINCLUDE_START:
        case XML_XINCLUDE_END:
            return 0;
        case XML_PI_NODE:
            if (xmlStrEqual(cur->name, AXLE_DOE_OFF) || xmlStrEqual(cur->name, AXLE_DOE_ON))
                return 0;
            break;
        default:
            break;
        }
        /* depth-first walk over element content (attributes are not walked:
           their values serialize and re-parse exactly). */
        if (cur->type == XML_ELEMENT_NODE && cur->children != NULL) {
            cur = cur->children;
            continue;
        }
        while (cur != NULL && cur->next == NULL) {
            cur = cur->parent;
            if (cur == NULL || cur->type == XML_DOCUMENT_NODE) return 1;
        }
        if (cur != NULL) cur = cur->next;
    }
    return 1;
}

/*
 * The canonical form of a tree: a byte string that encodes everything
 * shim_dump_xml's serialization reads (the document's version, encoding
 * and standalone; a DTD node's name and identifiers; every node's type,
 * name, namespace, content, namespace declarations and attributes, in
 * order; where each element ends), each string length-prefixed and a
 * missing one marked as such. Equal forms therefore serialize to equal
 * bytes, so its hash can identify a tree handed to the next stage without
 * serializing it (for the 10 KB sample article: 33k instructions against
 * 199k, callgrind). Returns 0 with the form in
 * *out (allocated with xmlMalloc; free with xmlFree) and its length in
 * *len; 1 when the tree holds something the form does not encode (a DTD
 * with declarations, an entity reference or any other node type: the
 * caller serializes instead); -1 when out of memory.
 */
typedef struct {
    unsigned char *p;
    size_t len, cap;
    int failed;
} canon_buf;

static void canon_put(canon_buf *b, const void *data, size_t n) {
    if (b->failed) return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap;
        unsigned char *p;
        while (n > cap - b->len) {
            if (cap > ((size_t)1 << 30)) { b->failed = 1; return; }
            cap *= 2;
        }
        p = xmlRealloc(b->p, cap);
        if (p == NULL) { b->failed = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void canon_tag(canon_buf *b, unsigned char tag) { canon_put(b, &tag, 1); }

static void canon_int(canon_buf *b, int v) {
    uint32_t u = (uint32_t)v;
    unsigned char le[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                           (unsigned char)(u >> 24)};
    canon_put(b, le, 4);
}

/* A string: 0 when absent; else 1, its length (32 bits) and its bytes. */
static void canon_str(canon_buf *b, const xmlChar *s) {
    size_t n;
    if (s == NULL) { canon_tag(b, 0); return; }
    n = strlen((const char *)s);
    if (n > 0x7fffffff) { b->failed = 1; return; }
    canon_tag(b, 1);
    canon_int(b, (int)n);
    canon_put(b, s, n);
}

static void canon_ns(canon_buf *b, xmlNsPtr ns) {
    canon_tag(b, ns != NULL);
    if (ns != NULL) {
        canon_str(b, ns->prefix);
        canon_str(b, ns->href);
    }
}

/* One node's own record (an element's up to its content). 1: not encoded. */
static int canon_node(canon_buf *b, xmlNodePtr cur) {
    switch (cur->type) {
    case XML_ELEMENT_NODE: {
        xmlNsPtr ns;
        xmlAttrPtr a;
        canon_tag(b, 'E');
        canon_ns(b, cur->ns);
        canon_str(b, cur->name);
        for (ns = cur->nsDef; ns != NULL; ns = ns->next) {
            canon_tag(b, 'N');
            canon_int(b, (int)ns->type);
            canon_str(b, ns->prefix);
            canon_str(b, ns->href);
        }
        for (a = cur->properties; a != NULL; a = a->next) {
            xmlNodePtr t;
            if (a->type != XML_ATTRIBUTE_NODE) return 1;
            canon_tag(b, 'A');
            canon_ns(b, a->ns);
            canon_str(b, a->name);
            for (t = a->children; t != NULL; t = t->next) {
                if (t->type == XML_TEXT_NODE) {
                    canon_tag(b, t->name == xmlStringTextNoenc ? 'Y' : 'X');
                    canon_str(b, t->content);
                } else if (t->type == XML_ENTITY_REF_NODE) {
                    canon_tag(b, 'R');
                    canon_str(b, t->name);
                } else {
                    return 1;
                }
            }
            canon_tag(b, 'a');
        }
        canon_tag(b, '>');
        return 0;
    }
    case XML_TEXT_NODE:
        canon_tag(b, cur->name == xmlStringTextNoenc ? 'Y' : 'X');
        canon_str(b, cur->content);
        return 0;
    case XML_CDATA_SECTION_NODE:
        canon_tag(b, 'K');
        canon_str(b, cur->content);
        return 0;
    case XML_COMMENT_NODE:
        canon_tag(b, 'C');
        canon_str(b, cur->content);
        return 0;
    case XML_PI_NODE:
        canon_tag(b, 'P');
        canon_str(b, cur->name);
        canon_str(b, cur->content);
        return 0;
    case XML_DTD_NODE: {
        xmlDtdPtr dtd = (xmlDtdPtr)cur;
        if (cur->parent != (xmlNodePtr)cur->doc || dtd->children != NULL ||
            dtd->notations != NULL || dtd->elements != NULL || dtd->attributes != NULL ||
            dtd->entities != NULL || dtd->pentities != NULL)
            return 1;
        canon_tag(b, 'T');
        canon_str(b, dtd->name);
        canon_str(b, dtd->ExternalID);
        canon_str(b, dtd->SystemID);
        return 0;
    }
    default:
        return 1;
    }
}

int shim_tree_canon(xmlDocPtr d, unsigned char **out, size_t *len) {
    canon_buf b = {NULL, 0, 4096, 0};
    xmlNodePtr cur;
    int rc = 0;
    *out = NULL;
    *len = 0;
    if (d->type != XML_DOCUMENT_NODE) return 1;
    b.p = xmlMalloc(b.cap);
    if (b.p == NULL) return -1;
    canon_tag(&b, 'D');
    canon_str(&b, d->version);
    canon_str(&b, d->encoding);
    canon_int(&b, d->standalone);
    cur = d->children;
    while (cur != NULL) {
        if (canon_node(&b, cur) != 0) { rc = 1; break; }
        if (cur->type == XML_ELEMENT_NODE) {
            if (cur->children != NULL) {
                cur = cur->children;
                continue;
            }
            canon_tag(&b, 'e');
        }
        while (cur != NULL && cur->next == NULL) {
            cur = cur->parent;
            if (cur == NULL || cur == (xmlNodePtr)d) break;
            canon_tag(&b, 'e');
        }
        if (cur == NULL || cur == (xmlNodePtr)d) break;
        cur = cur->next;
    }
    if (rc == 0 && b.failed) rc = -1;
    if (rc != 0) {
        xmlFree(b.p);
        return rc;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}

/*
 * A parser input reading through I/O callbacks, for the external entity
 * loader. (A memory buffer would do for the parser, but XInclude's
 * parse="text" reads with xmlParserInputBufferRead, which only calls the
 * read callback: on a memory buffer it sees nothing.) On failure the
 * callbacks' close function is called on `ioctx`.
 */
xmlParserInputPtr shim_input_from_io(xmlParserCtxtPtr ctxt, xmlInputReadCallback ioread,
                                     xmlInputCloseCallback ioclose, void *ioctx, const char *url) {
    xmlParserInputBufferPtr buf;
    xmlParserInputPtr input;
    if (ctxt == NULL) { ioclose(ioctx); return NULL; }
    buf = xmlParserInputBufferCreateIO(ioread, ioclose, ioctx, XML_CHAR_ENCODING_NONE);
    if (buf == NULL) { ioclose(ioctx); return NULL; }
    input = xmlNewIOInputStream(ctxt, buf, XML_CHAR_ENCODING_NONE);
    if (input == NULL) return NULL; /* xmlNewIOInputStream freed buf */
    if (url != NULL) {
        input->filename = (const char *)xmlStrdup((const xmlChar *)url);
        if (ctxt->directory == NULL) ctxt->directory = xmlParserGetDirectory(url);
    }
    return input;
}

/* Prolog reading for the libxml2 fallback of the prolog scanner. */
xmlNodePtr shim_doc_children(xmlDocPtr d) { return d->children; }
xmlNodePtr shim_node_next(xmlNodePtr n) { return n->next; }
int shim_node_type(xmlNodePtr n) { return (int)n->type; }
const xmlChar *shim_node_name(xmlNodePtr n) { return n->name; }
const xmlChar *shim_node_content(xmlNodePtr n) { return n->content; }
const xmlChar *shim_node_ns_href(xmlNodePtr n) { return n->ns != NULL ? n->ns->href : NULL; }
const xmlChar *shim_node_ns_prefix(xmlNodePtr n) { return n->ns != NULL ? n->ns->prefix : NULL; }
const xmlChar *shim_dtd_external_id(xmlDocPtr d) { return d->intSubset != NULL ? d->intSubset->ExternalID : NULL; }
const xmlChar *shim_dtd_system_id(xmlDocPtr d) { return d->intSubset != NULL ? d->intSubset->SystemID : NULL; }
const xmlChar *shim_dtd_name(xmlDocPtr d) { return d->intSubset != NULL ? d->intSubset->name : NULL; }

/*
 * An embedded stylesheet (XSLT 1.0 section 2.7, `<?xml-stylesheet href="#id"?>`):
 * the element with that ID is copied into a document of its own and
 * compiled, as libxslt's xsltLoadStylesheetPI does. Returns NULL when there
 * is no such ID or the subtree is not a valid stylesheet. The caller still
 * owns (and frees) `doc`.
 */
xsltStylesheetPtr shim_embedded_stylesheet(xmlDocPtr doc, const char *id) {
    xmlAttrPtr attr = xmlGetID(doc, (const xmlChar *)id);
    xmlNodePtr subtree, copy;
    xmlDocPtr fake;
    xsltStylesheetPtr ret;
    if (attr == NULL || attr->parent == NULL) return NULL;
    subtree = attr->parent;
    fake = xmlNewDoc(NULL);
    if (fake == NULL) return NULL;
    if (doc->dict != NULL) {
        if (fake->dict != NULL) xmlDictFree(fake->dict);
        fake->dict = doc->dict;
        xmlDictReference(doc->dict);
    }
    copy = xmlDocCopyNode(subtree, fake, 1);
    if (copy == NULL) { xmlFreeDoc(fake); return NULL; }
    /* Namespaces in scope from the ancestors, as xsltLoadStylesheetPI
       re-declares them (it walks each ancestor's ns, not nsDef). */
    {
        xmlNodePtr anc = subtree;
        while ((anc = anc->parent) != NULL && anc != (xmlNodePtr)doc) {
            xmlNsPtr ns;
            if (anc->type != XML_ELEMENT_NODE) continue;
            for (ns = anc->ns; ns != NULL; ns = ns->next)
                xmlNewNs(copy, ns->href, ns->prefix);
        }
    }
    fake->URL = xmlNodeGetBase(doc, subtree->parent);
    xmlAddChild((xmlNodePtr)fake, copy);
    ret = xsltParseStylesheetDoc(fake);
    if (ret == NULL) { xmlFreeDoc(fake); return NULL; }
    if (ret->errors != 0) { xsltFreeStylesheet(ret); return NULL; }
    return ret;
}

/*
 * xmlStrEqual, defined again: the same answers as libxml2's, faster.
 *
 * libxslt 1.1.35 (built without XSLT_REFACTORED, as Debian builds it) asks
 * IS_XSLT_ELEM(n), that is xmlStrEqual(n->ns->href, XSLT_NAMESPACE), for
 * every instruction it executes and every template body it enters. The two
 * strings are never the same pointer, so libxml2's byte-at-a-time loop walks
 * all 36 bytes of "http://www.w3.org/1999/XSL/Transform" each time: 8.6% of
 * an uncached three-stage render's instructions (callgrind).
 *
 * A definition in the executable comes first in the dynamic linker's lookup
 * order, so libxslt's and libexslt's calls (through their PLT) land here, as
 * the C allocator's do in mimalloc (see src/main.rs). The linker exports it
 * because those libraries reference it; shim_str_equal_is_ours() asks the
 * dynamic linker which definition wins, and `ffi::tests` checks the answer.
 * (libxml2's calls to itself are direct and keep its own.) Equality by
 * strcmp is what libxml2 itself compiles under
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, and libc's strcmp compares a
 * vector at a time.
 */
int xmlStrEqual(const xmlChar *str1, const xmlChar *str2) {
    if (str1 == str2) return 1;
    if (str1 == NULL || str2 == NULL) return 0;
    return strcmp((const char *)str1, (const char *)str2) == 0;
}

/* 1 when the dynamic linker resolves xmlStrEqual to the definition above
 * (so libxslt's calls arrive here), 0 when to libxml2's. */
int shim_str_equal_is_ours(void) {
    return dlsym(RTLD_DEFAULT, "xmlStrEqual") == (void *)xmlStrEqual;
}

/*
 * xsltRegisterAllElement, defined again: the XSLT instructions registered
 * once for the process instead of once per transform.
 *
 * libxslt 1.1.35's xsltNewTransformContext registers the 24 XSLT elements
 * (apply-templates ... fallback) in a fresh per-context hash table, which
 * copies each name and the namespace URI, and frees it all with the
 * context: ~25k instructions a transform (callgrind: 15% of the trivial
 * page's uncached three-stage render). That table is only read by
 * xsltExtElementLookup, which looks in the context's table and then in the
 * process-wide table of module elements, and it is asked only by
 * element-available() and for elements marked as extension elements at
 * compile time (never XSLT's own: those carry their compiled form). So the
 * same 24 names, under the same functions, are registered once as module
 * elements and the per-context registration does nothing: every lookup
 * gives the answer it gave before. The call from xsltNewTransformContext
 * goes through libxslt's PLT, so the executable's definition is the one
 * called (as with xmlStrEqual above); shim_xslt_elements_are_shared() says
 * whether it is, and `ffi::tests` checks element-available() against a
 * list of answers xsltproc gives. (xsltCleanupGlobals would drop the
 * module elements for good; nothing in Axle calls it.)
 */
static void shim_message(xsltTransformContextPtr ctxt, xmlNodePtr node, xmlNodePtr inst,
                         xsltElemPreCompPtr comp) {
    (void)comp;
    xsltMessage(ctxt, node, inst); /* what libxslt's xsltMessageWrapper does */
}

static pthread_once_t xslt_elements_once = PTHREAD_ONCE_INIT;

static void register_xslt_elements(void) {
    static const struct {
        const char *name;
        xsltTransformFunction transform;
    } elements[] = {
        {"apply-templates", xsltApplyTemplates},
        {"apply-imports", xsltApplyImports},
        {"call-template", xsltCallTemplate},
        {"element", xsltElement},
        {"attribute", xsltAttribute},
        {"text", xsltText},
        {"processing-instruction", xsltProcessingInstruction},
        {"comment", xsltComment},
        {"copy", xsltCopy},
        {"value-of", xsltValueOf},
        {"number", xsltNumber},
        {"for-each", xsltForEach},
        {"if", xsltIf},
        {"choose", xsltChoose},
        {"sort", xsltSort},
        {"copy-of", xsltCopyOf},
        {"message", shim_message},
        /* "Those don't have callable entry points but are registered anyway" */
        {"variable", xsltDebug},
        {"param", xsltDebug},
        {"with-param", xsltDebug},
        {"decimal-format", xsltDebug},
        {"when", xsltDebug},
        {"otherwise", xsltDebug},
        {"fallback", xsltDebug},
    };
    size_t i;
    for (i = 0; i < sizeof elements / sizeof elements[0]; i++)
        xsltRegisterExtModuleElement(BAD_CAST elements[i].name, XSLT_NAMESPACE, NULL,
                                     elements[i].transform);
}

/* Called by ffi::init, before any transform thread starts. */
void shim_share_xslt_elements(void) { pthread_once(&xslt_elements_once, register_xslt_elements); }

/* Called by libxslt for every transform context: one pthread_once check. */
void xsltRegisterAllElement(xsltTransformContextPtr ctxt) {
    (void)ctxt;
    shim_share_xslt_elements();
}

/* 1 when the dynamic linker resolves xsltRegisterAllElement to the
 * definition above, 0 when to libxslt's. */
int shim_xslt_elements_are_shared(void) {
    return dlsym(RTLD_DEFAULT, "xsltRegisterAllElement") == (void *)xsltRegisterAllElement;
}

/* The running libxml2's version string ("20914" for 2.9.14). xmlParserVersion
 * is a macro over a per-thread accessor in thread-enabled builds and a plain
 * variable otherwise (and in later releases); reading it here follows
 * whichever the headers say. */
const char *shim_xml_parser_version(void) { return xmlParserVersion; }
