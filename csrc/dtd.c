/*
 * Shared parsed DTDs (see src/ffi/dtd.rs): parse a document's external
 * subset once, then give every later document that names it the same
 * parsed declarations instead of parsing the DTD again.
 *
 * Why: a DocBook document spends about 99% of its parse in the DTD
 * (11 ms of 11.1 ms for the suite's book.xml), and copying a parsed DTD
 * (xmlCopyDtd) costs 7 ms, so neither reparsing nor copying is cheap.
 *
 * How the parse is kept exact. What parsing the external subset leaves
 * behind, and how a document parsed with a template gets the same:
 *   - element, attribute and notation declarations: the document's own
 *     extSubset borrows the template's tables (read-only: the parser and
 *     libxslt only look declarations up, for IDs and mixed content);
 *   - general entities: copied into the document's extSubset on first use
 *     (the sax getEntity hook), because the parser writes into the entities
 *     it expands (children, checked counts); unparsed entities are copied
 *     up front (unparsed-entity-uri() looks them up without the hook);
 *   - the parser context's defaulted and typed attribute tables
 *     (attsDefault, attsSpecial): the template's, borrowed; their strings
 *     live in the template's dictionary, so the document is parsed with a
 *     sub-dictionary of it (as libxslt does for transform contexts), which
 *     keeps libxml2's pointer comparisons of names true;
 *   - the context's counters and flags (entity counts and sizes, input ids,
 *     hasPErefs, external, instate): set to what the template's own parse
 *     left, as differences from before the subset.
 * A template is used only where that list is the whole story: the template
 * parsed with no diagnostic at all, the document has no internal subset,
 * is not standalone="yes", and names the same external ID and the same
 * resolved system URI (computed as xmlSAX2ResolveEntity computes it).
 * Anywhere else the hook calls libxml2's own xmlSAX2ExternalSubset.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/SAX2.h>
#include <libxml/dict.h>
#include <libxml/entities.h>
#include <libxml/hash.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/uri.h>

typedef struct axle_dtd {
    atomic_int refs;
    /* The synthetic document whose external subset this is; its dict is
     * the parent of every dict that borrows from the template. */
    xmlDocPtr doc;
    xmlHashTablePtr atts_default;
    xmlHashTablePtr atts_special;
    xmlChar *uri;          /* resolved system URI */
    xmlChar *external_id;  /* public ID or NULL */
    int options;           /* ctxt->options of its parse */
    /* What parsing the subset changed in the parser context. */
    unsigned long d_nbentities, d_sizeentities, d_sizeentcopy;
    int d_input_id;
    int has_pe_refs, external, instate;
    /* The last diagnostic of the subset's parse (a warning at most, such
     * as a redefined attribute), which a full parse leaves in the context. */
    xmlError last_error;
    int unparsed;          /* how many unparsed entities the DTD declares */
    int ok;
} axle_dtd;

/* Per parse: what the externalSubset and getEntity hooks need. */
typedef struct {
    axle_dtd *t;      /* the template (use) or the one being built (record) */
    int record;       /* building the template */
    xmlDtdPtr installed; /* the document's extSubset borrowing from t */
    int worst;        /* record: the worst diagnostic level seen */
} parse_state;

/* sax->serror while a template is built: notes how bad it got. */
static void record_error(void *data, xmlErrorPtr e) {
    xmlParserCtxtPtr ctxt = data;
    parse_state *st = ctxt != NULL ? ctxt->_private : NULL;
    if (st != NULL && e != NULL && (int) e->level > st->worst) st->worst = (int) e->level;
}

static int str_eq(const xmlChar *a, const xmlChar *b) {
    if (a == NULL || b == NULL) return a == b;
    return xmlStrEqual(a, b);
}

/* The URI libxml2 will load for SystemID, exactly as xmlSAX2ResolveEntity
 * builds it. */
static xmlChar *resolve_uri(xmlParserCtxtPtr ctxt, const xmlChar *system_id) {
    const char *base = NULL;
    if (ctxt->input != NULL) base = ctxt->input->filename;
    if (base == NULL) base = ctxt->directory;
    return xmlBuildURI(system_id, (const xmlChar *) base);
}

static void free_default(void *payload, const xmlChar *name) {
    (void) name;
    xmlFree(payload);
}

static void dtd_free(axle_dtd *t) {
    if (t->atts_default != NULL) xmlHashFree(t->atts_default, free_default);
    if (t->atts_special != NULL) xmlHashFree(t->atts_special, NULL);
    if (t->doc != NULL) xmlFreeDoc(t->doc);
    xmlFree(t->uri);
    xmlFree(t->external_id);
    xmlResetError(&t->last_error);
    free(t);
}

void axle_dtd_release(axle_dtd *t) {
    if (t != NULL && atomic_fetch_sub(&t->refs, 1) == 1) dtd_free(t);
}

/* Copies entity `e` of the template into the document's extSubset. */
static xmlEntityPtr copy_entity(xmlDocPtr doc, xmlEntityPtr e) {
    xmlEntityPtr c = xmlAddDtdEntity(doc, e->name, (int) e->etype, e->ExternalID,
                                     e->SystemID, e->content);
    if (c == NULL) return NULL;
    if (e->orig != NULL) c->orig = xmlStrdup(e->orig);
    if (e->URI != NULL) c->URI = xmlStrdup(e->URI);
    c->checked = e->checked;
    return c;
}

static void copy_unparsed(void *payload, void *data, const xmlChar *name) {
    xmlEntityPtr e = payload;
    (void) name;
    if (e->etype == XML_EXTERNAL_GENERAL_UNPARSED_ENTITY) copy_entity(data, e);
}

static void count_unparsed(void *payload, void *data, const xmlChar *name) {
    (void) name;
    if (((xmlEntityPtr) payload)->etype == XML_EXTERNAL_GENERAL_UNPARSED_ENTITY) ++*(int *) data;
}

static int dtd_usable(xmlParserCtxtPtr ctxt, axle_dtd *t, const xmlChar *external_id,
                      const xmlChar *system_id) {
    xmlDocPtr doc = ctxt->myDoc;
    xmlChar *uri;
    int same;
    if (t == NULL || !t->ok || doc == NULL || system_id == NULL) return 0;
    if (!ctxt->wellFormed || ctxt->disableSAX || ctxt->validate || ctxt->html) return 0;
    if (ctxt->options != t->options || ctxt->loadsubset == 0) return 0;
    if (ctxt->lastError.code != XML_ERR_OK || ctxt->errNo != XML_ERR_OK) return 0;
    if (ctxt->attsDefault != NULL || ctxt->attsSpecial != NULL || ctxt->hasPErefs) return 0;
    if (ctxt->standalone == 1 || doc->standalone == 1) return 0;
    if (doc->extSubset != NULL) return 0;
    if (doc->intSubset != NULL &&
        (doc->intSubset->children != NULL || doc->intSubset->entities != NULL ||
         doc->intSubset->pentities != NULL || doc->intSubset->elements != NULL ||
         doc->intSubset->attributes != NULL || doc->intSubset->notations != NULL))
        return 0;
    if (!str_eq(external_id, t->external_id)) return 0;
    uri = resolve_uri(ctxt, system_id);
    same = uri != NULL && xmlStrEqual(uri, t->uri);
    xmlFree(uri);
    return same;
}

static void install(xmlParserCtxtPtr ctxt, parse_state *st, const xmlChar *name,
                    const xmlChar *external_id, const xmlChar *system_id) {
    axle_dtd *t = st->t;
    xmlDtdPtr shared = t->doc->extSubset;
    xmlDtdPtr dtd = xmlNewDtd(ctxt->myDoc, name, external_id, system_id);
    if (dtd == NULL) {
        xmlSAX2ExternalSubset(ctxt, name, external_id, system_id);
        return;
    }
    atomic_fetch_add(&t->refs, 1);
    dtd->_private = t;
    dtd->elements = shared->elements;
    dtd->attributes = shared->attributes;
    dtd->notations = shared->notations;
    st->installed = dtd;
    if (t->unparsed > 0 && shared->entities != NULL)
        xmlHashScan(shared->entities, copy_unparsed, ctxt->myDoc);
    ctxt->attsDefault = t->atts_default;
    ctxt->attsSpecial = t->atts_special;
    ctxt->nbentities += t->d_nbentities;
    ctxt->sizeentities += t->d_sizeentities;
    ctxt->sizeentcopy += t->d_sizeentcopy;
    ctxt->input_id += t->d_input_id;
    ctxt->hasPErefs = t->has_pe_refs;
    ctxt->external = t->external;
    ctxt->instate = (xmlParserInputState) t->instate;
    if (t->last_error.code != XML_ERR_OK) xmlCopyError(&t->last_error, &ctxt->lastError);
}

/* sax->externalSubset for both modes. */
static void hook_external_subset(void *ctx, const xmlChar *name, const xmlChar *external_id,
                                 const xmlChar *system_id) {
    xmlParserCtxtPtr ctxt = ctx;
    parse_state *st = ctxt->_private;
    if (st != NULL && st->record) {
        axle_dtd *t = st->t;
        unsigned long nb = ctxt->nbentities, size = ctxt->sizeentities,
                      copy = ctxt->sizeentcopy;
        int id = ctxt->input_id;
        int clean_before = ctxt->wellFormed && ctxt->valid && ctxt->errNo == XML_ERR_OK &&
                           ctxt->lastError.code == XML_ERR_OK && !ctxt->hasPErefs &&
                           ctxt->attsDefault == NULL && ctxt->attsSpecial == NULL;
        st->worst = XML_ERR_NONE;
        xmlSAX2ExternalSubset(ctx, name, external_id, system_id);
        t->d_nbentities = ctxt->nbentities - nb;
        t->d_sizeentities = ctxt->sizeentities - size;
        t->d_sizeentcopy = ctxt->sizeentcopy - copy;
        t->d_input_id = ctxt->input_id - id;
        t->has_pe_refs = ctxt->hasPErefs;
        t->external = ctxt->external;
        t->instate = (int) ctxt->instate;
        t->options = ctxt->options;
        xmlCopyError(&ctxt->lastError, &t->last_error);
        t->uri = system_id != NULL ? resolve_uri(ctxt, system_id) : NULL;
        t->external_id = external_id != NULL ? xmlStrdup(external_id) : NULL;
        /* Warnings (a redefined attribute) leave the tree as it is; an
         * error anywhere means the subset is not shared. */
        t->ok = clean_before && st->worst <= XML_ERR_WARNING && t->uri != NULL &&
                ctxt->myDoc != NULL && ctxt->myDoc->extSubset != NULL && ctxt->wellFormed &&
                ctxt->valid && ctxt->nsWellFormed && !ctxt->disableSAX &&
                ctxt->errNo == XML_ERR_OK;
        return;
    }
    if (st != NULL && dtd_usable(ctxt, st->t, external_id, system_id)) {
        install(ctxt, st, name, external_id, system_id);
        return;
    }
    xmlSAX2ExternalSubset(ctx, name, external_id, system_id);
}

/* sax->getEntity: copies a template entity into the document before
 * libxml2's own lookup, which then finds it where a full parse puts it. */
static xmlEntityPtr hook_get_entity(void *ctx, const xmlChar *name) {
    xmlParserCtxtPtr ctxt = ctx;
    parse_state *st = ctxt != NULL ? ctxt->_private : NULL;
    if (st != NULL && st->installed != NULL && name != NULL) {
        xmlDtdPtr shared = st->t->doc->extSubset;
        xmlEntityPtr e = shared->entities != NULL ? xmlHashLookup(shared->entities, name) : NULL;
        if (e != NULL && (st->installed->entities == NULL ||
                          xmlHashLookup(st->installed->entities, name) == NULL))
            copy_entity(st->installed->doc, e);
    }
    return xmlSAX2GetEntity(ctx, name);
}

/* A parser context for `buf` with the hooks and `st` installed, parsed by
 * `dict` (a new dictionary when NULL). Mirrors xmlReadMemory/xmlDoRead. */
static xmlParserCtxtPtr new_ctxt(const char *buf, int len, const char *url, int options,
                                 parse_state *st, xmlDictPtr parent) {
    xmlParserCtxtPtr ctxt = xmlCreateMemoryParserCtxt(buf, len);
    if (ctxt == NULL) return NULL;
    if (parent != NULL) {
        xmlDictPtr sub = xmlDictCreateSub(parent);
        if (sub == NULL) {
            xmlFreeParserCtxt(ctxt);
            return NULL;
        }
        xmlDictFree(ctxt->dict);
        ctxt->dict = sub;
        ctxt->str_xml = xmlDictLookup(ctxt->dict, BAD_CAST "xml", 3);
        ctxt->str_xmlns = xmlDictLookup(ctxt->dict, BAD_CAST "xmlns", 5);
        ctxt->str_xml_ns = xmlDictLookup(ctxt->dict, XML_XML_NAMESPACE, 36);
    }
    ctxt->_private = st;
    if (st->record) ctxt->sax->serror = record_error;
    ctxt->sax->externalSubset = hook_external_subset;
    ctxt->sax->getEntity = hook_get_entity;
    xmlCtxtUseOptions(ctxt, options);
    if (url != NULL && ctxt->input != NULL && ctxt->input->filename == NULL)
        ctxt->input->filename = (char *) xmlStrdup((const xmlChar *) url);
    return ctxt;
}

/* Frees a document parsed by axle_dtd_read: gives the borrowed tables back
 * first. Also right for any other document. */
void axle_dtd_free_doc(xmlDocPtr doc) {
    xmlDtdPtr dtd;
    axle_dtd *t = NULL;
    if (doc == NULL) return;
    dtd = doc->extSubset;
    if (dtd != NULL && dtd->_private != NULL) {
        t = dtd->_private;
        dtd->elements = NULL;
        dtd->attributes = NULL;
        dtd->notations = NULL;
        dtd->_private = NULL;
    }
    xmlFreeDoc(doc);
    axle_dtd_release(t);
}

/* Only documents whose extSubset axle_dtd_read installed may carry a
 * template in _private; say whether this one does. */
static int axle_dtd_borrowed(xmlDocPtr doc) {
    return doc != NULL && doc->extSubset != NULL && doc->extSubset->_private != NULL;
}

/* Parses the external subset that a document at `url` with this DOCTYPE
 * names, once, into a template (refs = 1). NULL when out of memory; a
 * template that is not `ok` records that the subset cannot be shared (its
 * parse said something, or failed). */
axle_dtd *axle_dtd_build(const char *url, const char *public_id, const char *system_id,
                         int options) {
    axle_dtd *t;
    parse_state st;
    xmlParserCtxtPtr ctxt;
    xmlBufferPtr text;
    const char *q;
    if (system_id == NULL) return NULL;
    t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    atomic_init(&t->refs, 1);
    text = xmlBufferCreate();
    if (text == NULL) {
        free(t);
        return NULL;
    }
    /* <!DOCTYPE axle-dtd PUBLIC "p" "s"><axle-dtd/>: the literals as the
     * document wrote them (a literal holds one kind of quote at most). */
    xmlBufferCCat(text, "<!DOCTYPE axle-dtd ");
    if (public_id != NULL) {
        q = strchr(public_id, '"') != NULL ? "'" : "\"";
        xmlBufferCCat(text, "PUBLIC ");
        xmlBufferCCat(text, q);
        xmlBufferCCat(text, public_id);
        xmlBufferCCat(text, q);
        xmlBufferCCat(text, " ");
    } else {
        xmlBufferCCat(text, "SYSTEM ");
    }
    q = strchr(system_id, '"') != NULL ? "'" : "\"";
    xmlBufferCCat(text, q);
    xmlBufferCCat(text, system_id);
    xmlBufferCCat(text, q);
    xmlBufferCCat(text, "><axle-dtd/>");
    st.t = t;
    st.record = 1;
    st.installed = NULL;
    st.worst = XML_ERR_NONE;
    ctxt = new_ctxt((const char *) xmlBufferContent(text), xmlBufferLength(text), url, options,
                    &st, NULL);
    if (ctxt == NULL) {
        xmlBufferFree(text);
        free(t);
        return NULL;
    }
    xmlParseDocument(ctxt);
    xmlBufferFree(text);
    /* The cleaned tables, as the body of a document sees them. */
    t->atts_default = ctxt->attsDefault;
    t->atts_special = ctxt->attsSpecial;
    ctxt->attsDefault = NULL;
    ctxt->attsSpecial = NULL;
    t->doc = ctxt->myDoc;
    ctxt->myDoc = NULL;
    if (!ctxt->wellFormed || t->doc == NULL || t->doc->extSubset == NULL ||
        t->doc->dict == NULL || st.worst > XML_ERR_WARNING)
        t->ok = 0;
    /* Scanning some two thousand DocBook entities on every lent parse for
     * the unparsed ones was about 4% of the dynamic (docbook) request's
     * perf samples; count them once. */
    if (t->ok && t->doc->extSubset->entities != NULL)
        xmlHashScan(t->doc->extSubset->entities, count_unparsed, &t->unparsed);
    xmlFreeParserCtxt(ctxt);
    return t;
}

/* Parses a document (as xmlReadMemory with `options`), with template `t`
 * standing in for the external subset when usable. *used says whether it
 * was (the document must then be freed with axle_dtd_free_doc). */
xmlDocPtr axle_dtd_read(const char *buf, int len, const char *url, int options, axle_dtd *t,
                        int *used) {
    parse_state st;
    xmlParserCtxtPtr ctxt;
    xmlDocPtr ret;
    *used = 0;
    st.t = t;
    st.record = 0;
    st.installed = NULL;
    st.worst = XML_ERR_NONE;
    ctxt = new_ctxt(buf, len, url, options, &st, t != NULL && t->ok ? t->doc->dict : NULL);
    if (ctxt == NULL) return NULL;
    xmlParseDocument(ctxt);
    /* The borrowed tables go back before the context frees its own. */
    if (st.installed != NULL) {
        if (ctxt->attsDefault == t->atts_default) ctxt->attsDefault = NULL;
        if (ctxt->attsSpecial == t->atts_special) ctxt->attsSpecial = NULL;
    }
    if (ctxt->wellFormed || ctxt->recovery) {
        ret = ctxt->myDoc;
    } else {
        ret = NULL;
        if (ctxt->myDoc != NULL) axle_dtd_free_doc(ctxt->myDoc);
    }
    ctxt->myDoc = NULL;
    ctxt->_private = NULL;
    xmlFreeParserCtxt(ctxt);
    *used = ret != NULL && st.installed != NULL;
    return ret;
}

/* xmlBuildURI for the Rust side (the key a template is looked up by). */
xmlChar *axle_dtd_resolve(const char *system_id, const char *base) {
    return xmlBuildURI((const xmlChar *) system_id, (const xmlChar *) base);
}

int axle_dtd_ok(const axle_dtd *t) { return t != NULL && t->ok; }

static void copy_missing(void *payload, void *data, const xmlChar *name) {
    xmlDtdPtr dtd = data;
    if (dtd->entities == NULL || xmlHashLookup(dtd->entities, name) == NULL)
        copy_entity(dtd->doc, payload);
}

/* Copies every entity of the template the document does not have yet, so
 * lookups that bypass the getEntity hook (XInclude merging entities) see
 * what a full parse gives. */
void axle_dtd_materialize(xmlDocPtr doc) {
    axle_dtd *t;
    if (!axle_dtd_borrowed(doc)) return;
    t = doc->extSubset->_private;
    if (t->doc->extSubset->entities != NULL)
        xmlHashScan(t->doc->extSubset->entities, copy_missing, doc->extSubset);
}
