/*
 * HTML serialization of a transform's result: the bytes libxslt's
 * xsltSaveResultToString gives for the html output method with UTF-8 output
 * (libxml2 2.9.14's HTML serializer, formatting and escaping rules), written
 * into one growing buffer.
 *
 * Why it exists: libxml2 writes each piece through its output-buffer layer
 * (a strlen and a buffer append per piece) and escapes every text node into
 * a freshly allocated 1000-byte buffer. That was 20% of an uncached request
 * for the sample article (575k of 2.92M instructions, callgrind), where
 * nginx's XSLT filter pays the same. Here pieces are appended directly,
 * text is escaped in runs, and element descriptions are looked up once per
 * name.
 *
 * Byte-exactness is the contract: tests compare this against
 * xsltSaveResultToString on generated trees and the conformance suites.
 * Anything outside the rules below (another method or encoding, a tree that
 * is not an HTML document) is left to libxslt: shim_save_html returns 1.
 *
 * The rules, as libxml2 2.9.14 applies them (HTMLtree.c, entities.c, buf.c):
 * - The document's DTD node gives `<!DOCTYPE name PUBLIC "pub" "sys">\n`
 *   (or ` SYSTEM "sys"`, left out for about:legacy-compat), values quoted
 *   as below; the document ends with "\n".
 * - An element: `<`, prefix and name, its namespace declarations, its
 *   attributes; then `>` for an HTML empty element (br, img...); with no
 *   children `>` for an element whose end tag may be left out (except html
 *   and body), else `></name>`; otherwise the children and `</name>`.
 *   Only an element with no namespace has an HTML description.
 * - Formatting (indent): a newline after the start tag of a block (not
 *   inline) element whose first child is not text or an entity reference
 *   and which has more than one child, and before its end tag when its last
 *   child is not text or an entity reference; a newline after a block
 *   element followed by a sibling that is not text or an entity reference.
 *   Never inside an element whose name starts with 'p' (p, pre, param).
 * - Attributes: boolean ones (checked, selected...) as the bare name; else
 *   the value with < > & escaped (except `<!--...-->` and `&{...}` kept as
 *   written) and quoted; href, action, src (and name on a) of an element
 *   without namespace are URI-escaped after leading blanks.
 * - Quoting: "value"; 'value' when it holds " but not '; with both, "..."
 *   and every " as &quot;.
 * - Text: < > & escaped, other control bytes than tab, newline and CR
 *   dropped, everything else as is; raw inside script and style, and for
 *   disable-output-escaping text. Comments, PIs (`<?name content>`),
 *   CDATA (raw) and entity references (`&name;`) as written.
 */
#include <stdint.h>
#include <string.h>
#include <libxml/parserInternals.h>
#include <libxml/globals.h>
#include <libxml/tree.h>
#include <libxml/uri.h>
#include <libxml/HTMLparser.h>
#include <libxml/HTMLtree.h>
#include <libxslt/xsltInternals.h>
#include <libxslt/imports.h>

typedef struct {
    unsigned char *p;
    size_t len, cap;
    int failed;
} hbuf;

/* Makes room for n more bytes; 0 (and failed set) when it cannot. */
static int hb_grow(hbuf *b, size_t n) {
    size_t cap;
    unsigned char *p;
    if (b->failed) return 0;
    cap = b->cap;
    while (n > cap - b->len) {
        if (cap > ((size_t)1 << 30)) { b->failed = 1; return 0; }
        cap *= 2;
    }
    p = xmlRealloc(b->p, cap);
    if (p == NULL) { b->failed = 1; return 0; }
    b->p = p;
    b->cap = cap;
    return 1;
}

static inline void hb_put(hbuf *b, const void *data, size_t n) {
    if (n > b->cap - b->len && !hb_grow(b, n)) return;
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void hb_str(hbuf *b, const xmlChar *s) {
    if (s != NULL) hb_put(b, s, strlen((const char *)s));
}

#define HB_LIT(b, lit) hb_put((b), (lit), sizeof(lit) - 1)

/* A name with its namespace prefix, if it has one. */
static void hb_qname(hbuf *b, xmlNsPtr ns, const xmlChar *name) {
    if (ns != NULL && ns->prefix != NULL) {
        hb_str(b, ns->prefix);
        HB_LIT(b, ":");
    }
    hb_str(b, name);
}

/* Quoted as xmlBufWriteQuotedString quotes. */
static void hb_quoted(hbuf *b, const xmlChar *s) {
    const char *c = (const char *)s;
    if (strchr(c, '"') == NULL) {
        HB_LIT(b, "\"");
        hb_str(b, s);
        HB_LIT(b, "\"");
    } else if (strchr(c, '\'') == NULL) {
        HB_LIT(b, "'");
        hb_str(b, s);
        HB_LIT(b, "'");
    } else {
        HB_LIT(b, "\"");
        while (*c != 0) {
            const char *q = strchr(c, '"');
            if (q == NULL) {
                hb_str(b, (const xmlChar *)c);
                break;
            }
            hb_put(b, c, (size_t)(q - c));
            HB_LIT(b, "&quot;");
            c = q + 1;
        }
        HB_LIT(b, "\"");
    }
}

/* Does text escaping do anything to this byte (or end at it)? */
static inline int special(unsigned char c) {
    return c < 0x20 ? (c != '\t' && c != '\n' && c != '\r') : (c == '<' || c == '>' || c == '&');
}

/* Has any of the eight bytes of v the value b (the classic zero-byte test)? */
static inline int has_byte(uint64_t v, unsigned char b) {
    uint64_t x = v ^ (0x0101010101010101ULL * b);
    return ((x - 0x0101010101010101ULL) & ~x & 0x8080808080808080ULL) != 0;
}

/* Has any of the eight bytes of v a value below 0x20? */
static inline int has_control(uint64_t v) {
    return ((v - 0x2020202020202020ULL) & ~v & 0x8080808080808080ULL) != 0;
}

/* Is any of the eight bytes at p one that special() picks? */
static inline int any_special8(const xmlChar *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return has_control(v) || has_byte(v, '<') || has_byte(v, '>') || has_byte(v, '&');
}

/* The first byte in [s, end) that special() picks, or end. */
static inline const xmlChar *next_special(const xmlChar *s, const xmlChar *end) {
    for (;;) {
        const xmlChar *stop;
        while (end - s >= 8 && !any_special8(s)) s += 8;
        /* tab, newline and CR stop the word test but not special() */
        stop = end - s >= 8 ? s + 8 : end;
        while (s < stop && !special(*s)) s++;
        if (s < stop || s == end) return s;
    }
}

/* Text content of an HTML document, escaped as xmlEncodeEntitiesReentrant does. */
static void hb_text(hbuf *b, const xmlChar *s) {
    const xmlChar *end = s + strlen((const char *)s);
    for (;;) {
        const xmlChar *run = s;
        s = next_special(s, end);
        if (s > run) hb_put(b, run, (size_t)(s - run));
        if (s == end) return;
        switch (*s) {
        case '<': HB_LIT(b, "&lt;"); break;
        case '>': HB_LIT(b, "&gt;"); break;
        case '&': HB_LIT(b, "&amp;"); break;
        default: break; /* a control byte other than tab, newline, CR: dropped */
        }
        s++;
    }
}

/* Is `s` free of anything attribute escaping would change? */
static int plain(const xmlChar *s) {
    const xmlChar *end = s + strlen((const char *)s);
    return next_special(s, end) == end;
}

static int ieq(const xmlChar *a, const char *b) {
    return a != NULL && xmlStrcasecmp(a, BAD_CAST b) == 0;
}

/*
 * What the rules ask of a name (its HTML element description, whether it
 * is a boolean attribute, whether it is script or style), remembered per
 * name pointer for one serialization: names mostly come from one
 * dictionary, and one pointer is one string while the tree is not edited.
 */
#define NAME_SLOTS 128
enum { KNOW_DESC = 1, KNOW_BOOLEAN = 2, KNOW_RAW = 4, KNOW_URI = 8 };
typedef struct {
    const xmlChar *name;
    const htmlElemDesc *desc;
    unsigned char known, boolean, raw, uri;
} name_facts;
typedef struct {
    name_facts slot[NAME_SLOTS];
} name_cache;

static name_facts *facts(name_cache *c, const xmlChar *name) {
    uint64_t h = (uint64_t)(uintptr_t)name * 0x9E3779B97F4A7C15ULL;
    name_facts *f = &c->slot[h >> 57]; /* the top 7 bits: NAME_SLOTS */
    if (f->name != name || f->known == 0) {
        f->name = name;
        f->known = 0;
    }
    return f;
}

/* htmlTagLookup of an element without namespace; NULL for any other. */
static const htmlElemDesc *describe(name_cache *c, xmlNodePtr el) {
    name_facts *f;
    if (el->ns != NULL) return NULL;
    f = facts(c, el->name);
    if (!(f->known & KNOW_DESC)) {
        f->desc = htmlTagLookup(el->name);
        f->known |= KNOW_DESC;
    }
    return f->desc;
}

static int is_boolean(name_cache *c, const xmlChar *name) {
    name_facts *f = facts(c, name);
    if (!(f->known & KNOW_BOOLEAN)) {
        f->boolean = htmlIsBooleanAttr(name) != 0;
        f->known |= KNOW_BOOLEAN;
    }
    return f->boolean;
}

/* Is an attribute of this name a URI when neither it nor its element has
   a namespace? 1 for href, action and src; 2 for name (a URI on a); 0 not. */
static int uri_kind(name_cache *c, const xmlChar *name) {
    name_facts *f = facts(c, name);
    if (!(f->known & KNOW_URI)) {
        f->uri = (ieq(name, "href") || ieq(name, "action") || ieq(name, "src")) ? 1
                 : ieq(name, "name")                                           ? 2
                                                                               : 0;
        f->known |= KNOW_URI;
    }
    return f->uri;
}

/* Is text inside an element of this name written raw (script, style)? */
static int is_raw(name_cache *c, const xmlChar *name) {
    name_facts *f;
    if (name == NULL) return 0;
    f = facts(c, name);
    if (!(f->known & KNOW_RAW)) {
        f->raw = ieq(name, "script") || ieq(name, "style");
        f->known |= KNOW_RAW;
    }
    return f->raw;
}

static void hb_attr(hbuf *b, name_cache *c, xmlDocPtr doc, xmlAttrPtr a) {
    xmlChar *value;
    const xmlChar *v;
    HB_LIT(b, " ");
    hb_qname(b, a->ns, a->name);
    if (a->children == NULL || is_boolean(c, a->name)) return;
    if (a->children->next == NULL && a->children->type == XML_TEXT_NODE &&
        a->children->content != NULL && plain(a->children->content)) {
        value = NULL;
        v = a->children->content;
    } else {
        value = xmlNodeListGetString(doc, a->children, 0);
        if (value == NULL) {
            HB_LIT(b, "=\"\"");
            return;
        }
        v = value;
    }
    HB_LIT(b, "=");
    if (a->ns == NULL && a->parent != NULL && a->parent->ns == NULL &&
        (uri_kind(c, a->name) == 1 || (uri_kind(c, a->name) == 2 && ieq(a->parent->name, "a")))) {
        const xmlChar *t = v;
        xmlChar *escaped;
        while (IS_BLANK_CH(*t)) t++;
        escaped = xmlURIEscapeStr(t, BAD_CAST "@/:=?;#%&,+<>");
        hb_quoted(b, escaped != NULL ? escaped : v);
        if (escaped != NULL) xmlFree(escaped);
    } else {
        hb_quoted(b, v);
    }
    if (value != NULL) xmlFree(value);
}

static void hb_dtd(hbuf *b, xmlDtdPtr dtd) {
    HB_LIT(b, "<!DOCTYPE ");
    hb_str(b, dtd->name);
    if (dtd->ExternalID != NULL) {
        HB_LIT(b, " PUBLIC ");
        hb_quoted(b, dtd->ExternalID);
        if (dtd->SystemID != NULL) {
            HB_LIT(b, " ");
            hb_quoted(b, dtd->SystemID);
        }
    } else if (dtd->SystemID != NULL && !xmlStrEqual(dtd->SystemID, BAD_CAST "about:legacy-compat")) {
        HB_LIT(b, " SYSTEM ");
        hb_quoted(b, dtd->SystemID);
    }
    HB_LIT(b, ">\n");
}

/* Neither text nor an entity reference (the formatting rules' test). */
static inline int not_texty(xmlNodePtr n) {
    return n->type != XML_TEXT_NODE && n->type != XML_ENTITY_REF_NODE;
}

/* Formatting never adds a newline inside p, pre or param (or a nameless node). */
static inline int starts_with_p(xmlNodePtr n) {
    return n->name == NULL || n->name[0] == 'p';
}

/* A newline right inside block element `el`, next to `edge` (its first
   child after the start tag, its last before the end tag). */
static inline int newline_inside(int format, const htmlElemDesc *info, xmlNodePtr el,
                                 xmlNodePtr edge) {
    return format && info != NULL && !info->isinline && not_texty(edge) &&
           el->children != el->last && !starts_with_p(el);
}

/* A newline after block element `el` (in `parent`), before its next sibling. */
static inline int newline_after(int format, const htmlElemDesc *info, xmlNodePtr el,
                                xmlNodePtr parent) {
    return format && info != NULL && !info->isinline && el->next != NULL &&
           not_texty(el->next) && parent != NULL && !starts_with_p(parent);
}

/* The walk; 0 done, 1 a tree shape this does not handle. */
static int dump_doc(hbuf *b, xmlDocPtr doc, int format) {
    xmlNodePtr root = (xmlNodePtr)doc, cur = root, parent = root->parent;
    const htmlElemDesc *info;
    name_cache names; /* 4 KiB, on the stack: no allocation per page */
    memset(&names, 0, sizeof(names));
    for (;;) {
        switch (cur->type) {
        case XML_HTML_DOCUMENT_NODE:
        case XML_DOCUMENT_NODE:
            if (((xmlDocPtr)cur)->intSubset != NULL) hb_dtd(b, ((xmlDocPtr)cur)->intSubset);
            if (cur->children == NULL) {
                HB_LIT(b, "\n");
            } else if (cur->parent == parent) {
                parent = cur;
                cur = cur->children;
                continue;
            }
            break;
        case XML_ELEMENT_NODE: {
            xmlAttrPtr a;
            xmlNsPtr ns;
            if (cur->parent != parent) return 1;
            info = describe(&names, cur);
            HB_LIT(b, "<");
            hb_qname(b, cur->ns, cur->name);
            for (ns = cur->nsDef; ns != NULL; ns = ns->next) {
                if (ns->type != XML_NAMESPACE_DECL || ns->href == NULL ||
                    xmlStrEqual(ns->prefix, BAD_CAST "xml"))
                    continue;
                if (ns->prefix != NULL) {
                    HB_LIT(b, " xmlns:");
                    hb_str(b, ns->prefix);
                } else {
                    HB_LIT(b, " xmlns");
                }
                HB_LIT(b, "=");
                hb_quoted(b, ns->href);
            }
            for (a = cur->properties; a != NULL; a = a->next) hb_attr(b, &names, doc, a);
            if (info != NULL && info->empty) {
                HB_LIT(b, ">");
            } else if (cur->children == NULL) {
                if (info != NULL && info->saveEndTag != 0 &&
                    !xmlStrEqual(BAD_CAST info->name, BAD_CAST "html") &&
                    !xmlStrEqual(BAD_CAST info->name, BAD_CAST "body")) {
                    HB_LIT(b, ">");
                } else {
                    HB_LIT(b, "></");
                    hb_qname(b, cur->ns, cur->name);
                    HB_LIT(b, ">");
                }
            } else {
                HB_LIT(b, ">");
                if (newline_inside(format, info, cur, cur->children)) HB_LIT(b, "\n");
                parent = cur;
                cur = cur->children;
                continue;
            }
            if (newline_after(format, info, cur, parent)) HB_LIT(b, "\n");
            break;
        }
        case XML_TEXT_NODE:
            if (cur->content == NULL) break;
            if (cur->name != xmlStringTextNoenc &&
                (parent == NULL || !is_raw(&names, parent->name)))
                hb_text(b, cur->content);
            else
                hb_str(b, cur->content);
            break;
        case XML_COMMENT_NODE:
            if (cur->content != NULL) {
                HB_LIT(b, "<!--");
                hb_str(b, cur->content);
                HB_LIT(b, "-->");
            }
            break;
        case XML_PI_NODE:
            if (cur->name != NULL) {
                HB_LIT(b, "<?");
                hb_str(b, cur->name);
                if (cur->content != NULL) {
                    HB_LIT(b, " ");
                    hb_str(b, cur->content);
                }
                HB_LIT(b, ">");
            }
            break;
        case XML_ENTITY_REF_NODE:
            HB_LIT(b, "&");
            hb_str(b, cur->name);
            HB_LIT(b, ";");
            break;
        case XML_CDATA_SECTION_NODE:
            hb_str(b, cur->content);
            break;
        default:
            break;
        }

        for (;;) {
            if (cur == root) return 0;
            if (cur->next != NULL) {
                cur = cur->next;
                break;
            }
            cur = parent;
            parent = cur->parent;
            if (cur->type == XML_HTML_DOCUMENT_NODE || cur->type == XML_DOCUMENT_NODE) {
                HB_LIT(b, "\n");
            } else {
                info = format ? describe(&names, cur) : NULL;
                if (newline_inside(format, info, cur, cur->last)) HB_LIT(b, "\n");
                HB_LIT(b, "</");
                hb_qname(b, cur->ns, cur->name);
                HB_LIT(b, ">");
                if (newline_after(format, info, cur, parent)) HB_LIT(b, "\n");
            }
        }
    }
}

/*
 * What xsltSaveResultToString would give for `result` of `style`, when
 * that is HTML in UTF-8: returns 0 with the bytes in *out (xmlMalloc'ed,
 * free with xmlFree) and their count in *len; 1 when libxslt must
 * serialize it (the tree is untouched unless it turned out to be malformed
 * after its meta element was set, which libxslt sets again, to the same);
 * -1 when out of memory.
 */
int shim_save_html(xmlDocPtr result, xsltStylesheetPtr style, xmlChar **out, int *len) {
    const xmlChar *method, *encoding;
    int indent, rc;
    hbuf b = {NULL, 0, 4096, 0}; /* doubled as needed */
    *out = NULL;
    *len = 0;
    if (result->type != XML_HTML_DOCUMENT_NODE || result->children == NULL ||
        (result->children->type == XML_DTD_NODE && result->children->next == NULL) ||
        style->methodURI != NULL)
        return 1;
    XSLT_GET_IMPORT_PTR(method, style, method)
    XSLT_GET_IMPORT_PTR(encoding, style, encoding)
    XSLT_GET_IMPORT_INT(indent, style, indent)
    if (method != NULL && !xmlStrEqual(method, BAD_CAST "html")) return 1;
    if (encoding != NULL && !ieq(encoding, "UTF-8") && !ieq(encoding, "UTF8")) return 1;
    if (indent == -1) indent = 1;
    b.p = xmlMalloc(b.cap);
    if (b.p == NULL) return -1;
    htmlSetMetaEncoding(result, encoding != NULL ? encoding : BAD_CAST "UTF-8");
    rc = dump_doc(&b, result, indent);
    if (rc == 0 && b.failed) rc = -1;
    if (rc != 0 || b.len > 0x7fffffff) {
        xmlFree(b.p);
        return rc != 0 ? rc : -1;
    }
    *out = b.p;
    *len = (int)b.len;
    return 0;
}
