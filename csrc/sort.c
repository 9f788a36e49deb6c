/*
 * xsl:sort as browsers sort (a location's xsl-sort = "unicode").
 *
 * libxslt's own sort compares text keys byte by byte (code point order)
 * and ignores lang and case-order. Chromium registers a sort function of
 * its own that compares them with a Unicode collation instead, so a page
 * a browser rendered from a client-side stylesheet may order its lists
 * differently from xsltproc. axle_unicode_sort follows the steps of
 * libxslt's default sort function (evaluate the data-type and order
 * attribute value templates, compute every key once for the whole node
 * set, a shell sort over the first key with the later keys breaking ties,
 * document order last, so the sort is stable), and compares text keys
 * through the collator Rust keeps for the first key's lang and
 * case-order (src/ffi/collate.rs: ICU4X's collator with CLDR data,
 * upper case first unless case-order="lower-first", as Chromium does).
 * The first key, when it is text, is compared by sort keys made once per
 * item (bytes that compare as the texts collate: a shell sort compares
 * each item many times); later keys, needed only on ties, by the
 * collator. Number keys compare as numbers, NaN first, as in libxslt.
 */

#include <string.h>

#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <libxslt/xsltInternals.h>
#include <libxslt/xsltutils.h>
#include <libxslt/templates.h>

/* src/ffi/collate.rs: the collator for a lang (NULL: English) and a case
 * order, kept for the thread; and a comparison through it of two UTF-8
 * strings (NULL counts as empty): <0, 0 or >0. */
extern const void *axle_collator(const char *lang, int lower_first);
extern int axle_collate(const void *collator, const xmlChar *a, const xmlChar *b);
/* A text's sort key under the collator (bytes that compare as the texts
 * collate), its length in *len; freed with axle_sort_key_free. */
extern unsigned char *axle_sort_key(const void *collator, const xmlChar *text, size_t *len);
extern void axle_sort_key_free(unsigned char *key, size_t len);

/* Two sort keys, bytewise (a prefix first): -1, 0 or 1. */
static int compare_sort_keys(const unsigned char *a, size_t a_len, const unsigned char *b,
                             size_t b_len) {
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
    if (c != 0)
        return c < 0 ? -1 : 1;
    return a_len == b_len ? 0 : (a_len < b_len ? -1 : 1);
}

/* One key of two items: -1, 0 or 1 (before any descending). */
static int compare_key(const void *collator, int number, xmlXPathObjectPtr a,
                       xmlXPathObjectPtr b) {
    if (number) {
        int a_nan = xmlXPathIsNaN(a->floatval), b_nan = xmlXPathIsNaN(b->floatval);
        if (a_nan || b_nan)
            return a_nan == b_nan ? 0 : (a_nan ? -1 : 1);
        if (a->floatval == b->floatval)
            return 0;
        return a->floatval > b->floatval ? 1 : -1;
    }
    int c = axle_collate(collator, a->stringval, b->stringval);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

/* Evaluates a sort's data-type and order when they are attribute value
 * templates; returns which were evaluated (bit 0: data-type, bit 1:
 * order), to be freed after the sort as libxslt does. */
static int eval_avts(xsltTransformContextPtr ctxt, xmlNodePtr sort,
                     xsltStylePreCompPtr comp) {
    int evaluated = 0;
    if (comp->stype == NULL && comp->has_stype) {
        comp->stype = xsltEvalAttrValueTemplate(ctxt, sort, (const xmlChar *)"data-type",
                                                XSLT_NAMESPACE);
        if (comp->stype != NULL) {
            evaluated |= 1;
            if (xmlStrEqual(comp->stype, (const xmlChar *)"number")) {
                comp->number = 1;
            } else {
                if (!xmlStrEqual(comp->stype, (const xmlChar *)"text"))
                    xsltTransformError(ctxt, NULL, sort,
                                       "xsltDoSortFunction: no support for data-type = %s\n",
                                       comp->stype);
                comp->number = 0;
            }
        }
    }
    if (comp->order == NULL && comp->has_order) {
        comp->order = xsltEvalAttrValueTemplate(ctxt, sort, (const xmlChar *)"order",
                                                XSLT_NAMESPACE);
        if (comp->order != NULL) {
            evaluated |= 2;
            if (xmlStrEqual(comp->order, (const xmlChar *)"descending")) {
                comp->descending = 1;
            } else {
                if (!xmlStrEqual(comp->order, (const xmlChar *)"ascending"))
                    xsltTransformError(ctxt, NULL, sort,
                                       "xsltDoSortFunction: invalid value %s for order\n",
                                       comp->order);
                comp->descending = 0;
            }
        }
    }
    return evaluated;
}

void axle_unicode_sort(xsltTransformContextPtr ctxt, xmlNodePtr *sorts, int nbsorts) {
    xmlXPathObjectPtr *keys[XSLT_MAX_SORT];
    unsigned char **sort_keys = NULL; /* the first key's, when text */
    size_t *sort_key_lens = NULL;
    int evaluated[XSLT_MAX_SORT];
    xsltStylePreCompPtr comps[XSLT_MAX_SORT];
    xmlNodeSetPtr list;
    int len, level;

    if (ctxt == NULL || sorts == NULL || nbsorts <= 0 || nbsorts >= XSLT_MAX_SORT)
        return;
    for (level = 0; level < nbsorts; level++) {
        if (sorts[level] == NULL || sorts[level]->psvi == NULL)
            return;
        comps[level] = (xsltStylePreCompPtr)sorts[level]->psvi;
    }
    list = ctxt->nodeList;
    if (list == NULL || list->nodeNr <= 1)
        return;
    len = list->nodeNr;

    for (level = 0; level < nbsorts; level++) {
        evaluated[level] = eval_avts(ctxt, sorts[level], comps[level]);
        keys[level] = NULL;
    }
    /* The first key for every item now; later keys when a tie needs them. */
    keys[0] = xsltComputeSortResult(ctxt, sorts[0]);
    if (keys[0] != NULL) {
        const char *lang = comps[0]->has_lang ? (const char *)comps[0]->lang : NULL;
        const void *collator = axle_collator(lang, comps[0]->lower_first);
        xmlXPathObjectPtr *first = keys[0];
        int incr, i, j;
        if (!comps[0]->number) {
            sort_keys = (unsigned char **)xmlMalloc(len * sizeof(*sort_keys));
            sort_key_lens = (size_t *)xmlMalloc(len * sizeof(*sort_key_lens));
            if (sort_keys == NULL || sort_key_lens == NULL) {
                xmlFree(sort_keys);
                xmlFree(sort_key_lens);
                sort_keys = NULL;
                sort_key_lens = NULL;
            } else {
                for (i = 0; i < len; i++) {
                    sort_key_lens[i] = 0;
                    sort_keys[i] = first[i] == NULL
                                       ? NULL
                                       : axle_sort_key(collator, first[i]->stringval,
                                                       &sort_key_lens[i]);
                }
            }
        }
        for (incr = len / 2; incr > 0; incr /= 2) {
            for (i = incr; i < len; i++) {
                if (first[i] == NULL)
                    continue;
                for (j = i - incr; j >= 0; j -= incr) {
                    int order;
                    if (first[j] == NULL) {
                        order = 1; /* an item without a key goes last */
                    } else {
                        if (sort_keys != NULL)
                            order = compare_sort_keys(sort_keys[j], sort_key_lens[j],
                                                      sort_keys[j + incr],
                                                      sort_key_lens[j + incr]);
                        else
                            order = compare_key(collator, comps[0]->number, first[j],
                                                first[j + incr]);
                        if (comps[0]->descending)
                            order = -order;
                    }
                    for (level = 1; order == 0 && level < nbsorts; level++) {
                        xmlXPathObjectPtr *next;
                        if (keys[level] == NULL)
                            keys[level] = xsltComputeSortResult(ctxt, sorts[level]);
                        next = keys[level];
                        if (next == NULL)
                            break;
                        if (next[j] == NULL) {
                            if (next[j + incr] != NULL)
                                order = 1;
                        } else if (next[j + incr] != NULL) {
                            order = compare_key(collator, comps[level]->number, next[j],
                                                next[j + incr]);
                            if (comps[level]->descending)
                                order = -order;
                        }
                    }
                    if (order == 0) /* document order: a stable sort */
                        order = first[j]->index > first[j + incr]->index;
                    if (order <= 0)
                        break;
                    /* Swap the items, their nodes and every computed key. */
                    {
                        xmlNodePtr node = list->nodeTab[j];
                        list->nodeTab[j] = list->nodeTab[j + incr];
                        list->nodeTab[j + incr] = node;
                    }
                    if (sort_keys != NULL) {
                        unsigned char *key = sort_keys[j];
                        size_t key_len = sort_key_lens[j];
                        sort_keys[j] = sort_keys[j + incr];
                        sort_key_lens[j] = sort_key_lens[j + incr];
                        sort_keys[j + incr] = key;
                        sort_key_lens[j + incr] = key_len;
                    }
                    for (level = 0; level < nbsorts; level++) {
                        xmlXPathObjectPtr tmp;
                        if (keys[level] == NULL)
                            continue;
                        tmp = keys[level][j];
                        keys[level][j] = keys[level][j + incr];
                        keys[level][j + incr] = tmp;
                    }
                }
            }
        }
    }

    if (sort_keys != NULL) {
        int i;
        for (i = 0; i < len; i++)
            axle_sort_key_free(sort_keys[i], sort_key_lens[i]);
        xmlFree(sort_keys);
        xmlFree(sort_key_lens);
    }
    for (level = 0; level < nbsorts; level++) {
        if (evaluated[level] & 1) {
            xmlFree((xmlChar *)comps[level]->stype);
            comps[level]->stype = NULL;
        }
        if (evaluated[level] & 2) {
            xmlFree((xmlChar *)comps[level]->order);
            comps[level]->order = NULL;
        }
        if (keys[level] != NULL) {
            int i;
            for (i = 0; i < len; i++)
                xmlXPathFreeObject(keys[level][i]);
            xmlFree(keys[level]);
        }
    }
}

/* Sorts of this transform go through axle_unicode_sort. */
void shim_ctxt_unicode_sort(xsltTransformContextPtr ctxt) {
    xsltSetCtxtSortFunc(ctxt, axle_unicode_sort);
}
