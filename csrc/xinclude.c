/*
 * How large a document would become once its XInclude elements are
 * processed, counted before processing them (src/ffi/doc.rs,
 * XmlDoc::xinclude_expansion). Why: libxml2 copies an included document
 * once per inclusion, so a handful of small files that each include the
 * next twice expand to millions of nodes; libxml2 has no limit of its own,
 * and failing its allocations mid-copy (the render memory budget) leaks
 * part of the copy. Counting first refuses such a document before any of
 * it is copied.
 *
 * The count: every node of the document, plus for each xi:include what
 * processing puts in its place besides the element itself (which becomes
 * the XInclude start marker): the end marker, and
 * - parse="xml" (the default) naming another document: that document's
 *   count (its document node standing for the end marker) (its href resolved as libxml2 resolves it, against the
 *   element's base; loaded through the same loader, so confined to the
 *   root), memoized per URL;
 * - parse="xml" naming the document it is in (no href, or its own URL)
 *   with an xpointer: that document's count (found once the rest of it is
 *   counted), as the nodes copied come from it;
 * - parse="text": one text node.
 * An xpointer may narrow what is copied but never widens it, as long as
 * it selects one element: a shorthand (an ID) or element() (with xmlns()
 * parts). Any other scheme (libxml2's xpointer() and xpath1(): node sets
 * of overlapping subtrees, ranges) can copy one document many times over,
 * which the count cannot bound without evaluating it: such an include
 * counts as past the limit. A fallback is counted whole: the count is an
 * upper bound. Counting stops once past `limit`.
 */
#include <stdlib.h>
#include <libxml/hash.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/uri.h>

static const xmlChar XI_2001[] = "http://www.w3.org/2001/XInclude";
static const xmlChar XI_2003[] = "http://www.w3.org/2003/XInclude";

/* Included documents nested deeper than this count as over the limit. */
#define MAX_XI_DEPTH 40

static double count_nodes(xmlNodePtr node, xmlHashTablePtr memo, int options,
                          int depth, double limit, double *local);

static void free_count(void *payload, const xmlChar *name) {
    (void)name;
    free(payload);
}

static double count_document(const xmlChar *url, xmlHashTablePtr memo, int options,
                             int depth, double limit) {
    double *known = xmlHashLookup(memo, url);
    if (known != NULL) return *known;
    if (depth > MAX_XI_DEPTH) return limit + 1;
    double *slot = malloc(sizeof(double));
    if (slot == NULL) return limit + 1;
    /* 0 while it is being counted: an inclusion loop, which libxml2
     * refuses itself, adds nothing. */
    *slot = 0;
    if (xmlHashAddEntry(memo, url, slot) != 0) {
        free(slot);
        return limit + 1;
    }
    double n = 1;
    xmlDocPtr doc = xmlReadFile((const char *)url, NULL, options);
    if (doc != NULL) {
        double local = 0;
        n += count_nodes(doc->children, memo, options, depth + 1, limit, &local);
        n += local * (n + 1);
        xmlFreeDoc(doc);
    }
    *slot = n;
    return n;
}

static int is_include(xmlNodePtr cur) {
    return cur->type == XML_ELEMENT_NODE && cur->ns != NULL &&
           (xmlStrEqual(cur->ns->href, XI_2001) || xmlStrEqual(cur->ns->href, XI_2003)) &&
           xmlStrEqual(cur->name, (const xmlChar *)"include");
}

/* Does `xp` select at most one element: a shorthand pointer (no
 * parenthesis) or only element() and xmlns() parts? */
static int selects_one_element(const xmlChar *xp) {
    if (xmlStrchr(xp, '(') == NULL) return 1;
    const xmlChar *p = xp;
    while (*p != 0) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (*p == 0) break;
        const xmlChar *name = p;
        while (*p != 0 && *p != '(') p++;
        if (*p != '(') return 0;
        int len = (int)(p - name);
        if (!((len == 7 && xmlStrncmp(name, (const xmlChar *)"element", 7) == 0) ||
              (len == 5 && xmlStrncmp(name, (const xmlChar *)"xmlns", 5) == 0)))
            return 0;
        /* The scheme data: balanced parentheses, ^ escapes the next one. */
        int open = 0;
        for (; *p != 0; p++) {
            if (*p == '^') {
                if (p[1] == 0) return 0;
                p++;
            } else if (*p == '(') {
                open++;
            } else if (*p == ')' && --open == 0) {
                p++;
                break;
            }
        }
        if (open != 0) return 0;
    }
    return 1;
}

/* `local` counts the includes that copy from the document being counted
 * (its caller adds that document's count for each). */
static double count_nodes(xmlNodePtr node, xmlHashTablePtr memo, int options,
                          int depth, double limit, double *local) {
    double n = 0;
    for (xmlNodePtr cur = node; cur != NULL; cur = cur->next) {
        n += 1;
        if (is_include(cur)) {
            xmlChar *parse = xmlGetNoNsProp(cur, (const xmlChar *)"parse");
            xmlChar *href = xmlGetNoNsProp(cur, (const xmlChar *)"href");
            xmlChar *xp = xmlGetNoNsProp(cur, (const xmlChar *)"xpointer");
            int text = parse != NULL && xmlStrEqual(parse, (const xmlChar *)"text");
            /* Below, the end marker counts as the included document's
             * node, or with the copy of the document it is in, or here. */
            if (text) {
                n += 2;
            } else if (xp != NULL && !selects_one_element(xp)) {
                n = limit + 1;
            } else if (href != NULL && href[0] != 0) {
                xmlChar *base = xmlNodeGetBase(cur->doc, cur);
                xmlChar *uri = xmlBuildURI(href, base);
                if (uri == NULL) {
                    n = limit + 1;
                } else if (xp != NULL && cur->doc->URL != NULL &&
                           xmlStrEqual(uri, cur->doc->URL)) {
                    *local += 1;
                } else {
                    n += count_document(uri, memo, options, depth, limit);
                }
                if (uri != NULL) xmlFree(uri);
                if (base != NULL) xmlFree(base);
            } else if (xp != NULL) {
                *local += 1;
            }
            if (parse != NULL) xmlFree(parse);
            if (href != NULL) xmlFree(href);
            if (xp != NULL) xmlFree(xp);
        }
        if (cur->type == XML_ELEMENT_NODE && cur->children != NULL)
            n += count_nodes(cur->children, memo, options, depth, limit, local);
        if (n > limit) return n;
    }
    return n;
}

/* The node count of `doc` with its XInclude elements processed (an upper
 * bound), or a number past `limit` once it is known to be past it. */
double axle_xinclude_expansion(xmlDocPtr doc, int options, double limit) {
    xmlHashTablePtr memo = xmlHashCreate(16);
    if (memo == NULL) return limit + 1;
    if (doc->URL != NULL) {
        double *self = malloc(sizeof(double));
        if (self != NULL) {
            *self = 0;
            if (xmlHashAddEntry(memo, doc->URL, self) != 0) free(self);
        }
    }
    double local = 0;
    double n = 1 + count_nodes(doc->children, memo, options, 0, limit, &local);
    n += local * (n + 1);
    xmlHashFree(memo, free_count);
    return n;
}

/* Every node of `doc` as the count above counts them (the document node,
 * and each node of every children list under it, XInclude start and end
 * markers included; a DTD's declarations and an entity reference's shared
 * content not), read from the tree as it is: what
 * `axle_xinclude_expansion` must bound once the XIncludes are processed.
 * For the fuzz target and tests (src/ffi/fuzzing.rs). */
static double tree_nodes(xmlNodePtr node) {
    double n = 0;
    for (xmlNodePtr cur = node; cur != NULL; cur = cur->next) {
        n += 1;
        if (cur->type != XML_DTD_NODE && cur->type != XML_ENTITY_REF_NODE &&
            cur->type != XML_ATTRIBUTE_NODE && cur->children != NULL)
            n += tree_nodes(cur->children);
    }
    return n;
}

double axle_tree_node_count(xmlDocPtr doc) { return 1 + tree_nodes(doc->children); }
