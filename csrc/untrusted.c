/* A client's document (a POST body) parsed by libxml2 under limits.
 *
 * Why it exists: a document a client sends is parsed once, by the same
 * parser the chain uses, and that parse must refuse what a client may not
 * do: name an external DTD or entity (a file under the root, whatever the
 * spelling), nest elements past a depth, give one element more attributes
 * than a bound, or expand entities far past the bytes it sent. libxml2
 * 2.9 bounds none of these as a server needs (it loads what the entity
 * loader gives, allows 256 levels, and lets one 100 KB entity be copied
 * thousands of times), so the parse runs with SAX2's own handlers wrapped:
 *
 * - internalSubset: a DOCTYPE with a public or system identifier stops
 *   the parse; externalSubset, resolveEntity: never load anything;
 * - entityDecl, unparsedEntityDecl: an external entity (general,
 *   parameter or unparsed) stops the parse at its declaration, before
 *   any reference, so duplicate declarations cannot hide one;
 * - startElementNs / endElementNs: the element depth, and the attribute
 *   count of each element;
 * - getEntity: every reference to an internal entity is charged its fully
 *   expanded size plus a fixed cost (as libxml2 2.11 charges them); past
 *   the floor, the total may not exceed `max_amplification` times the
 *   document's size.
 *
 * After the parse the tree's depth is measured again (an entity's
 * content is copied, not re-parsed, at its second reference, so the SAX
 * count cannot see it). The state is per thread: a parse runs on one
 * thread, and libxml2 parses an entity's content with a context of its
 * own, which the handlers must see too.
 */

#include <libxml/SAX2.h>
#include <libxml/entities.h>
#include <libxml/hash.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Why a parse was refused (0: it was not). Mirrored in src/ffi/untrusted.rs. */
enum {
    U_OK = 0,
    U_DEPTH = 1,
    U_ATTRIBUTES = 2,
    U_AMPLIFICATION = 3,
    U_EXTERNAL_DTD = 4,
    U_EXTERNAL_ENTITY = 5
};

/* What each reference costs beyond its text (libxml2 2.11's
 * XML_ENT_FIXED_COST). */
#define FIXED_COST 20.0
/* Entities nested deeper than this are refused (libxml2 allows 40). */
#define MAX_NESTING 40
/* The memo's marks: 0 absent, 1 being computed (a loop), else size + 2. */
#define IN_PROGRESS ((void *)(uintptr_t)1)

typedef struct {
    unsigned long max_depth;
    unsigned long max_attributes;
    double max_amplification;
    double floor;
    double input_len;

    unsigned long depth;
    double expanded;
    int refused;
    unsigned long reached;
    int line;
    xmlParserCtxtPtr outer;
    xmlHashTablePtr sizes;

    startElementNsSAX2Func start;
    endElementNsSAX2Func end;
    getEntitySAXFunc get_entity;
    internalSubsetSAXFunc internal_subset;
    entityDeclSAXFunc entity_decl;
} untrusted_state;

static __thread untrusted_state *current = NULL;

static void refuse(void *ctx, int why, unsigned long reached) {
    untrusted_state *s = current;
    xmlParserCtxtPtr ctxt = (xmlParserCtxtPtr)ctx;
    if (s == NULL) return;
    if (s->refused == U_OK) {
        s->refused = why;
        s->reached = reached;
        s->line = ctxt != NULL && ctxt->input != NULL ? ctxt->input->line : 0;
    }
    if (ctxt != NULL) xmlStopParser(ctxt);
    if (s->outer != NULL && s->outer != ctxt) xmlStopParser(s->outer);
}

/* Once refused, every later event only stops the parser again. */
static int stopped(void *ctx) {
    if (current == NULL || current->refused == U_OK) return 0;
    xmlStopParser((xmlParserCtxtPtr)ctx);
    return 1;
}

static void u_internal_subset(void *ctx, const xmlChar *name, const xmlChar *external_id,
                              const xmlChar *system_id) {
    if (stopped(ctx)) return;
    if (external_id != NULL || system_id != NULL) {
        refuse(ctx, U_EXTERNAL_DTD, 0);
        return;
    }
    current->internal_subset(ctx, name, NULL, NULL);
}

static void u_external_subset(void *ctx, const xmlChar *name, const xmlChar *external_id,
                              const xmlChar *system_id) {
    (void)name;
    /* Never loaded: refused when it was named, nothing to load otherwise. */
    if (external_id != NULL || system_id != NULL) refuse(ctx, U_EXTERNAL_DTD, 0);
}

static xmlParserInputPtr u_resolve_entity(void *ctx, const xmlChar *public_id,
                                          const xmlChar *system_id) {
    (void)public_id;
    (void)system_id;
    refuse(ctx, U_EXTERNAL_ENTITY, 0);
    return NULL;
}

static void u_entity_decl(void *ctx, const xmlChar *name, int type, const xmlChar *public_id,
                          const xmlChar *system_id, xmlChar *content) {
    if (stopped(ctx)) return;
    if (type != XML_INTERNAL_GENERAL_ENTITY && type != XML_INTERNAL_PARAMETER_ENTITY) {
        refuse(ctx, U_EXTERNAL_ENTITY, 0);
        return;
    }
    if (public_id != NULL || system_id != NULL) {
        refuse(ctx, U_EXTERNAL_ENTITY, 0);
        return;
    }
    current->entity_decl(ctx, name, type, NULL, NULL, content);
}

static void u_unparsed_entity_decl(void *ctx, const xmlChar *name, const xmlChar *public_id,
                                   const xmlChar *system_id, const xmlChar *notation) {
    (void)name;
    (void)public_id;
    (void)system_id;
    (void)notation;
    refuse(ctx, U_EXTERNAL_ENTITY, 0);
}

static double expanded_size(xmlDocPtr doc, xmlEntityPtr ent, int nesting);

/* The expanded size of the text `c` (an entity's replacement text): its
 * bytes, with each reference to another entity counted as that entity
 * expanded. */
static double text_size(xmlDocPtr doc, const xmlChar *c, int nesting) {
    double total = 0;
    while (*c != 0) {
        if (c[0] == '&' && c[1] != '#') {
            const xmlChar *end = xmlStrchr(c, ';');
            if (end == NULL) {
                total += 1;
                c++;
                continue;
            }
            xmlChar *name = xmlStrndup(c + 1, (int)(end - c - 1));
            if (name == NULL) return HUGE_VAL;
            xmlEntityPtr inner = xmlGetPredefinedEntity(name);
            if (inner == NULL && doc != NULL) inner = xmlGetDocEntity(doc, name);
            xmlFree(name);
            total += FIXED_COST + (inner == NULL ? 0 : expanded_size(doc, inner, nesting + 1));
            c = end + 1;
        } else {
            total += 1;
            c++;
        }
    }
    return total;
}

/* An internal general entity's size once every reference in it is
 * expanded, memoized by name; a loop or nesting past MAX_NESTING is
 * infinite (refused). */
static double expanded_size(xmlDocPtr doc, xmlEntityPtr ent, int nesting) {
    untrusted_state *s = current;
    if (ent == NULL || ent->content == NULL) return 0;
    if (ent->etype == XML_INTERNAL_PREDEFINED_ENTITY) return 1;
    if (ent->etype != XML_INTERNAL_GENERAL_ENTITY) return HUGE_VAL;
    if (nesting > MAX_NESTING || s == NULL) return HUGE_VAL;
    if (s->sizes == NULL) s->sizes = xmlHashCreate(16);
    if (s->sizes == NULL) return HUGE_VAL;
    void *memo = xmlHashLookup(s->sizes, ent->name);
    if (memo == IN_PROGRESS) return HUGE_VAL;
    if (memo != NULL) return (double)((uintptr_t)memo - 2);
    if (xmlHashAddEntry(s->sizes, ent->name, IN_PROGRESS) != 0) return HUGE_VAL;
    double size = text_size(doc, ent->content, nesting);
    uintptr_t stored = size >= (double)(UINTPTR_MAX / 2) ? UINTPTR_MAX / 2 : (uintptr_t)size;
    xmlHashUpdateEntry(s->sizes, ent->name, (void *)(stored + 2), NULL);
    return size;
}

static xmlEntityPtr u_get_entity(void *ctx, const xmlChar *name) {
    untrusted_state *s = current;
    xmlParserCtxtPtr ctxt = (xmlParserCtxtPtr)ctx;
    if (stopped(ctx)) return NULL;
    xmlEntityPtr ent = s->get_entity(ctx, name);
    if (ent == NULL || ent->etype == XML_INTERNAL_PREDEFINED_ENTITY) return ent;
    if (ent->etype != XML_INTERNAL_GENERAL_ENTITY) {
        refuse(ctx, U_EXTERNAL_ENTITY, 0);
        return NULL;
    }
    xmlDocPtr doc = ctxt != NULL ? ctxt->myDoc : NULL;
    if (doc == NULL && s->outer != NULL) doc = s->outer->myDoc;
    s->expanded += FIXED_COST + expanded_size(doc, ent, 0);
    if (s->expanded > s->floor && s->expanded > s->max_amplification * s->input_len) {
        refuse(ctx, U_AMPLIFICATION,
               s->expanded >= 1e18 ? (unsigned long)-1 : (unsigned long)s->expanded);
        return NULL;
    }
    return ent;
}

static void u_start(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri,
                    int nb_namespaces, const xmlChar **namespaces, int nb_attributes,
                    int nb_defaulted, const xmlChar **attributes) {
    untrusted_state *s = current;
    if (stopped(ctx)) return;
    s->depth++;
    if (s->depth > s->max_depth) {
        refuse(ctx, U_DEPTH, s->depth);
        return;
    }
    unsigned long attrs = (unsigned long)(nb_attributes > 0 ? nb_attributes : 0) +
                          (unsigned long)(nb_namespaces > 0 ? nb_namespaces : 0);
    if (attrs > s->max_attributes) {
        refuse(ctx, U_ATTRIBUTES, attrs);
        return;
    }
    s->start(ctx, localname, prefix, uri, nb_namespaces, namespaces, nb_attributes, nb_defaulted,
             attributes);
}

static void u_end(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri) {
    untrusted_state *s = current;
    if (s->depth > 0) s->depth--;
    if (stopped(ctx)) return;
    s->end(ctx, localname, prefix, uri);
}

/* The deepest element of the tree (1 for a root alone), by an iterative
 * walk. Also read by the post_document fuzz target (ffi::fuzzing). */
unsigned long axle_tree_depth(xmlDocPtr doc) {
    unsigned long depth = 0, most = 0;
    xmlNodePtr cur = doc->children;
    while (cur != NULL) {
        if (cur->type == XML_ELEMENT_NODE) {
            depth++;
            if (depth > most) most = depth;
            if (cur->children != NULL) {
                cur = cur->children;
                continue;
            }
            depth--;
        }
        while (cur != NULL && cur->next == NULL) {
            cur = cur->parent;
            if (cur == NULL || cur == (xmlNodePtr)doc) return most;
            if (cur->type == XML_ELEMENT_NODE) depth--;
        }
        if (cur != NULL) cur = cur->next;
    }
    return most;
}

static void u_free_size(void *payload, const xmlChar *name) {
    (void)payload;
    (void)name;
}

/* Parses `len` bytes at `buf` (base URL `url`) with `options` and the
 * limits. Returns the tree, or NULL: then *why says which limit refused it
 * (U_OK: a plain parse error, in the thread's error record), *reached the
 * value that passed it and *line where. */
xmlDocPtr axle_parse_untrusted(const char *buf, int len, const char *url, int options,
                               unsigned long max_depth, unsigned long max_attributes,
                               double max_amplification, double floor, int *why,
                               unsigned long *reached, int *line) {
    untrusted_state s;
    memset(&s, 0, sizeof s);
    s.max_depth = max_depth;
    s.max_attributes = max_attributes;
    s.max_amplification = max_amplification;
    s.floor = floor;
    s.input_len = (double)len;
    *why = U_OK;
    *reached = 0;
    *line = 0;

    xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
    if (ctxt == NULL || ctxt->sax == NULL) {
        if (ctxt != NULL) xmlFreeParserCtxt(ctxt);
        return NULL;
    }
    xmlSAXHandlerPtr sax = ctxt->sax;
    s.start = sax->startElementNs;
    s.end = sax->endElementNs;
    s.get_entity = sax->getEntity;
    s.internal_subset = sax->internalSubset;
    s.entity_decl = sax->entityDecl;
    if (s.start == NULL || s.end == NULL || s.get_entity == NULL || s.internal_subset == NULL ||
        s.entity_decl == NULL) {
        xmlFreeParserCtxt(ctxt);
        return NULL;
    }
    sax->startElementNs = u_start;
    sax->endElementNs = u_end;
    sax->getEntity = u_get_entity;
    sax->internalSubset = u_internal_subset;
    sax->externalSubset = u_external_subset;
    sax->resolveEntity = u_resolve_entity;
    sax->entityDecl = u_entity_decl;
    sax->unparsedEntityDecl = u_unparsed_entity_decl;
    s.outer = ctxt;

    untrusted_state *saved = current;
    current = &s;
    xmlDocPtr doc = xmlCtxtReadMemory(ctxt, buf, len, url, NULL, options);
    current = saved;

    if (s.refused != U_OK && doc != NULL) {
        xmlFreeDoc(doc);
        doc = NULL;
    }
    if (doc != NULL) {
        unsigned long depth = axle_tree_depth(doc);
        if (depth > max_depth) {
            xmlFreeDoc(doc);
            doc = NULL;
            s.refused = U_DEPTH;
            s.reached = depth;
        }
    }
    *why = s.refused;
    *reached = s.reached;
    *line = s.line;
    if (s.sizes != NULL) xmlHashFree(s.sizes, u_free_size);
    xmlFreeParserCtxt(ctxt);
    return doc;
}
