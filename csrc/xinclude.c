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
 * The count: every node of the document, plus for each xi:include with
 * parse="xml" (the default) the count of the document its href names
 * (resolved as libxml2 resolves it, against the element's base; loaded
 * through the same loader, so confined to the root), memoized per URL.
 * parse="text" counts as one node. An xpointer or a fallback is not
 * narrowed: the count is an upper bound. Counting stops once past `limit`.
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
                          int depth, double limit);

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
        n += count_nodes(doc->children, memo, options, depth + 1, limit);
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

static double count_nodes(xmlNodePtr node, xmlHashTablePtr memo, int options,
                          int depth, double limit) {
    double n = 0;
    for (xmlNodePtr cur = node; cur != NULL; cur = cur->next) {
        n += 1;
        if (is_include(cur)) {
            xmlChar *parse = xmlGetNoNsProp(cur, (const xmlChar *)"parse");
            xmlChar *href = xmlGetNoNsProp(cur, (const xmlChar *)"href");
            int text = parse != NULL && xmlStrEqual(parse, (const xmlChar *)"text");
            if (!text && href != NULL && href[0] != 0) {
                xmlChar *base = xmlNodeGetBase(cur->doc, cur);
                xmlChar *uri = xmlBuildURI(href, base);
                if (uri != NULL) {
                    n += count_document(uri, memo, options, depth, limit);
                    xmlFree(uri);
                } else {
                    n = limit + 1;
                }
                if (base != NULL) xmlFree(base);
            }
            if (parse != NULL) xmlFree(parse);
            if (href != NULL) xmlFree(href);
        }
        if (cur->type == XML_ELEMENT_NODE && cur->children != NULL)
            n += count_nodes(cur->children, memo, options, depth, limit);
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
    double n = 1 + count_nodes(doc->children, memo, options, 0, limit);
    xmlHashFree(memo, free_count);
    return n;
}
