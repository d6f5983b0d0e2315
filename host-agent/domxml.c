/*
 * Domain XML parsing with libxml2 and XPath.  The XML comes from libvirtd
 * (trusted, but parsed with the network and entity expansion off anyway);
 * every number is range-checked before it sizes anything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include "domxml.h"
#include "log.h"
#include "proto.h"
#include "util.h"

#define MAX_NODES	1024	/* guest NUMA cells */
#define MAX_PID		4194304	/* PID_MAX_LIMIT */

struct domxml_doc {
	xmlDocPtr		doc;
	xmlXPathContextPtr	ctx;
};

/* libxml2 prints parse errors on stderr by default; we report our own. */
static void
domxml_silent(void *ctx, const char *msg, ...)
{
}

static int
domxml_open(struct domxml_doc *d, const char *xml, size_t len, char *err,
    size_t errlen)
{
	memset(d, 0, sizeof(*d));
	if (len > INT32_MAX) {
		err_set(err, errlen, "XML document too large");
		return -1;
	}
	xmlSetGenericErrorFunc(NULL, domxml_silent);
	d->doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
	    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (d->doc == NULL) {
		const xmlError *e = xmlGetLastError();
		err_set(err, errlen, "XML does not parse%s%s",
		    e && e->message ? ": " : "", e && e->message ?
		    e->message : "");
		str_rstrip(err);
		/* libxml2's messages may span lines; a cause is one line. */
		for (char *p = err; (p = strchr(p, '\n')) != NULL;)
			*p = ' ';
		return -1;
	}
	d->ctx = xmlXPathNewContext(d->doc);
	if (d->ctx == NULL)
		fatalx("xmlXPathNewContext: out of memory");
	xmlXPathRegisterNs(d->ctx, (const xmlChar *)"p",
	    (const xmlChar *)POLMETA_NS);
	return 0;
}

static void
domxml_close(struct domxml_doc *d)
{
	xmlXPathFreeContext(d->ctx);
	xmlFreeDoc(d->doc);
	memset(d, 0, sizeof(*d));
}

/* Evaluate an XPath relative to node (NULL: the document). */
static xmlXPathObjectPtr
domxml_eval(struct domxml_doc *d, xmlNodePtr node, const char *expr)
{
	d->ctx->node = node ? node : xmlDocGetRootElement(d->doc);
	return xmlXPathEvalExpression((const xmlChar *)expr, d->ctx);
}

static int
domxml_count(xmlXPathObjectPtr o)
{
	if (o == NULL || o->type != XPATH_NODESET || o->nodesetval == NULL)
		return 0;
	return o->nodesetval->nodeNr;
}

/* The string value of an XPath, or NULL if it selects nothing.  Caller frees. */
static char *
domxml_str(struct domxml_doc *d, xmlNodePtr node, const char *expr)
{
	xmlXPathObjectPtr	 o;
	xmlChar			*s;
	char			*r;

	o = domxml_eval(d, node, expr);
	if (domxml_count(o) == 0) {
		xmlXPathFreeObject(o);
		return NULL;
	}
	s = xmlNodeGetContent(o->nodesetval->nodeTab[0]);
	xmlXPathFreeObject(o);
	if (s == NULL)
		return NULL;
	r = xstrdup((const char *)s);
	xmlFree(s);
	return r;
}

/*
 * An unsigned number from an XPath: 1 if found and valid, 0 if absent,
 * -1 if malformed or out of range (err).
 */
static int
domxml_uint(struct domxml_doc *d, xmlNodePtr node, const char *expr,
    uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	char	*s;
	int	 rc = 1;

	if ((s = domxml_str(d, node, expr)) == NULL)
		return 0;
	str_rstrip(s);
	if (parse_uint(s + strspn(s, " \t\n"), min, max, out) != 0) {
		char esc[64];
		err_set(err, errlen, "%s: '%s' is not a number in %llu..%llu",
		    expr, str_escape(esc, sizeof(esc), s, strlen(s)),
		    (unsigned long long)min, (unsigned long long)max);
		rc = -1;
	}
	free(s);
	return rc;
}

static int
domxml_cpulist(struct domxml_doc *d, xmlNodePtr node, const char *expr,
    struct cpuset *out, char *err, size_t errlen)
{
	char	*s, cause[128];
	int	 rc = 1;

	if ((s = domxml_str(d, node, expr)) == NULL)
		return 0;
	if (cpuset_parse(out, s, cause, sizeof(cause)) != 0) {
		err_set(err, errlen, "%s: %s", expr, cause);
		rc = -1;
	}
	free(s);
	return rc;
}

/* vCPUs enabled now: <vcpus><vcpu enabled>, else <vcpu current>. */
static int
domxml_online(struct domxml_doc *d, struct vm_info *info, char *err,
    size_t errlen)
{
	xmlXPathObjectPtr	o;
	uint64_t		v;
	int			i, n, rc;

	cpuset_zero(&info->online);
	o = domxml_eval(d, NULL, "/domain/vcpus/vcpu");
	n = domxml_count(o);
	for (i = 0; i < n; i++) {
		xmlNodePtr	 node = o->nodesetval->nodeTab[i];
		char		*en;

		rc = domxml_uint(d, node, "@id", 0, info->nvcpus - 1, &v,
		    err, errlen);
		if (rc <= 0) {
			if (rc == 0)
				err_set(err, errlen, "vcpus/vcpu without id");
			xmlXPathFreeObject(o);
			return -1;
		}
		en = domxml_str(d, node, "@enabled");
		if (en == NULL || strcmp(en, "yes") == 0)
			cpuset_set(&info->online, (unsigned int)v);
		free(en);
	}
	xmlXPathFreeObject(o);
	if (n > 0)
		return 0;

	rc = domxml_uint(d, NULL, "/domain/vcpu/@current", 1, info->nvcpus,
	    &v, err, errlen);
	if (rc < 0)
		return -1;
	if (rc == 0)
		v = info->nvcpus;
	cpuset_set_range(&info->online, 0, (unsigned int)v - 1);
	return 0;
}

/*
 * Guest cores from <cpu><topology>: libvirt numbers vCPUs socket by die by
 * core by thread, so core k holds vCPUs k*threads .. k*threads+threads-1.
 */
static int
domxml_topology(struct domxml_doc *d, struct vm_info *info, char *err,
    size_t errlen)
{
	static const char *const attr[] = {
		"/domain/cpu/topology/@sockets",
		"/domain/cpu/topology/@dies",
		"/domain/cpu/topology/@cores",
		"/domain/cpu/topology/@threads",
	};
	uint64_t	v[4] = { 1, 1, 1, 1 };
	unsigned int	i, k;
	int		rc, found = 0;

	for (i = 0; i < nitems(attr); i++) {
		rc = domxml_uint(d, NULL, attr[i], 1, DOMXML_MAX_VCPUS, &v[i],
		    err, errlen);
		if (rc < 0)
			return -1;
		found += rc;
	}
	if (found == 0) {
		v[0] = 1;
		v[2] = info->nvcpus;
		v[3] = 1;
	} else if (v[0] * v[1] * v[2] * v[3] != info->nvcpus) {
		err_set(err, errlen, "topology %llux%llux%llux%llu does "
		    "not match %u vCPUs", (unsigned long long)v[0],
		    (unsigned long long)v[1], (unsigned long long)v[2],
		    (unsigned long long)v[3], info->nvcpus);
		return -1;
	}
	info->sockets = (unsigned int)v[0];
	info->dies = (unsigned int)v[1];
	info->cores = (unsigned int)v[2];
	info->threads = (unsigned int)v[3];
	info->ncores = info->nvcpus / info->threads;
	info->core = xcalloc(info->ncores, sizeof(*info->core));
	for (k = 0; k < info->ncores; k++) {
		cpuset_zero(&info->core[k]);
		cpuset_set_range(&info->core[k], k * info->threads,
		    k * info->threads + info->threads - 1);
	}
	return 0;
}

static int
domxml_numa(struct domxml_doc *d, struct vm_info *info, char *err,
    size_t errlen)
{
	xmlXPathObjectPtr	o;
	unsigned int		k, c;
	int			i, n;

	o = domxml_eval(d, NULL, "/domain/cpu/numa/cell");
	n = domxml_count(o);
	if (n == 0) {
		xmlXPathFreeObject(o);
		return 0;
	}
	if (n > MAX_NODES) {
		err_set(err, errlen, "%d NUMA cells, more than %d", n,
		    MAX_NODES);
		xmlXPathFreeObject(o);
		return -1;
	}
	info->nnodes = (unsigned int)n;
	info->node = xcalloc((size_t)n, sizeof(*info->node));
	for (i = 0; i < n; i++) {
		struct cpuset all;

		if (domxml_cpulist(d, o->nodesetval->nodeTab[i], "@cpus",
		    &info->node[i], err, errlen) < 0) {
			xmlXPathFreeObject(o);
			return -1;
		}
		cpuset_zero(&all);
		cpuset_set_range(&all, 0, info->nvcpus - 1);
		if (!cpuset_subset(&info->node[i], &all)) {
			err_set(err, errlen, "NUMA cell %d names a vCPU "
			    "beyond %u", i, info->nvcpus - 1);
			xmlXPathFreeObject(o);
			return -1;
		}
	}
	xmlXPathFreeObject(o);

	info->core_node = xcalloc(info->ncores, sizeof(*info->core_node));
	for (k = 0; k < info->ncores; k++) {
		int first = cpuset_first(&info->core[k]);
		for (c = 0; c < info->nnodes; c++) {
			if (cpuset_isset(&info->node[c], (unsigned int)first)) {
				info->core_node[k] = c;
				break;
			}
		}
	}
	return 0;
}

/* <vcpu cpuset> pins every vCPU; <cputune><vcpupin> overrides one. */
static int
domxml_cputune(struct domxml_doc *d, struct vm_info *info, char *err,
    size_t errlen)
{
	xmlXPathObjectPtr	o;
	struct cpuset		all;
	uint64_t		v;
	unsigned int		i;
	int			j, n, rc;

	rc = domxml_uint(d, NULL, "/domain/cputune/shares", 0, UINT32_MAX, &v,
	    err, errlen);
	if (rc < 0)
		return -1;
	info->shares = rc ? (unsigned int)v : 0;

	rc = domxml_cpulist(d, NULL, "/domain/vcpu/@cpuset", &all, err,
	    errlen);
	if (rc < 0)
		return -1;
	o = domxml_eval(d, NULL, "/domain/cputune/vcpupin");
	n = domxml_count(o);
	if (rc > 0 || n > 0) {
		info->vcpupin = xcalloc(info->nvcpus, sizeof(*info->vcpupin));
		for (i = 0; i < info->nvcpus; i++) {
			if (rc > 0)
				info->vcpupin[i] = all;
			else
				cpuset_zero(&info->vcpupin[i]);
		}
	}
	for (j = 0; j < n; j++) {
		xmlNodePtr node = o->nodesetval->nodeTab[j];

		rc = domxml_uint(d, node, "@vcpu", 0, info->nvcpus - 1, &v,
		    err, errlen);
		if (rc == 0)
			err_set(err, errlen, "vcpupin without vcpu");
		if (rc <= 0 || domxml_cpulist(d, node, "@cpuset",
		    &info->vcpupin[v], err, errlen) < 0) {
			xmlXPathFreeObject(o);
			return -1;
		}
	}
	xmlXPathFreeObject(o);

	cpuset_zero(&info->emulatorpin);
	if (domxml_cpulist(d, NULL, "/domain/cputune/emulatorpin/@cpuset",
	    &info->emulatorpin, err, errlen) < 0)
		return -1;
	return 0;
}

int
domxml_parse(const char *xml, size_t len, struct vm_info *info, char *err,
    size_t errlen)
{
	struct domxml_doc	 d;
	char			*s;
	uint64_t		 v;
	int			 rc;

	memset(info, 0, sizeof(*info));
	info->id = -1;
	if (domxml_open(&d, xml, len, err, errlen) != 0)
		return -1;
	if (xmlDocGetRootElement(d.doc) == NULL || strcmp((const char *)
	    xmlDocGetRootElement(d.doc)->name, "domain") != 0) {
		err_set(err, errlen, "not a <domain> document");
		goto fail;
	}

	s = domxml_str(&d, NULL, "/domain/uuid");
	if (s == NULL || strlen(s) != VM_UUID_LEN - 1 ||
	    strspn(s, "0123456789abcdefABCDEF-") != VM_UUID_LEN - 1) {
		err_set(err, errlen, "missing or malformed <uuid>");
		free(s);
		goto fail;
	}
	memcpy(info->uuid, s, VM_UUID_LEN);
	free(s);
	info->name = domxml_str(&d, NULL, "/domain/name");
	if (info->name == NULL || info->name[0] == '\0') {
		err_set(err, errlen, "missing <name>");
		goto fail;
	}
	rc = domxml_uint(&d, NULL, "/domain/@id", 0, INT32_MAX, &v, err,
	    errlen);
	if (rc < 0)
		goto fail;
	info->id = rc ? (int)v : -1;

	rc = domxml_uint(&d, NULL, "/domain/vcpu", 1, DOMXML_MAX_VCPUS, &v,
	    err, errlen);
	if (rc <= 0) {
		if (rc == 0)
			err_set(err, errlen, "missing <vcpu>");
		goto fail;
	}
	info->nvcpus = (unsigned int)v;

	if (domxml_online(&d, info, err, errlen) != 0 ||
	    domxml_topology(&d, info, err, errlen) != 0 ||
	    domxml_numa(&d, info, err, errlen) != 0 ||
	    domxml_cputune(&d, info, err, errlen) != 0)
		goto fail;

	info->channel = domxml_str(&d, NULL, "/domain/devices/channel"
	    "[@type='unix'][target/@name='" PROTO_PORT_NAME "']/source/@path");
	domxml_close(&d);
	return 0;

fail:
	domxml_close(&d);
	vm_info_clear(info);
	info->id = -1;
	return -1;
}

static void
domxml_policy_default(struct vm_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->valid = true;
	polmeta_init(&m->pol);
}

/* Read and check the attributes of one <policy> element; 0 or -1 (m->error). */
static int
domxml_policy_attrs(struct domxml_doc *d, xmlNodePtr node, unsigned int nvcpus,
    struct vm_meta *m)
{
	char	*s, expr[32];
	int	 f, rc;

	for (f = 0; f < PM_NFIELDS; f++) {
		snprintf(expr, sizeof(expr), "@%s", polmeta_fields[f].attr);
		if ((s = domxml_str(d, node, expr)) == NULL)
			continue;
		str_rstrip(s);
		rc = polmeta_set_text(&m->pol, (enum polmeta_field)f,
		    s + strspn(s, " \t\n"), PMN_ATTR, m->error,
		    sizeof(m->error));
		free(s);
		if (rc != 0)
			return -1;
	}
	return polmeta_check(&m->pol, nvcpus, PMN_ATTR, m->error,
	    sizeof(m->error));
}

int
domxml_policy(const char *xml, size_t len, unsigned int nvcpus,
    struct vm_meta *m, char *err, size_t errlen)
{
	struct domxml_doc	d;
	xmlXPathObjectPtr	o;
	xmlNodePtr		root;
	xmlNodePtr		node = NULL;
	int			n;

	domxml_policy_default(m);
	if (domxml_open(&d, xml, len, err, errlen) != 0)
		return -1;
	/*
	 * A whole domain, or the bare element that virDomainGetMetadata
	 * returns.
	 */
	root = xmlDocGetRootElement(d.doc);
	if (root != NULL && strcmp((const char *)root->name, "policy") == 0 &&
	    root->ns != NULL && strcmp((const char *)root->ns->href,
	    POLMETA_NS) == 0) {
		node = root;
		n = 1;
		o = NULL;
	} else {
		o = domxml_eval(&d, NULL, "/domain/metadata/p:policy");
		n = domxml_count(o);
		if (n > 0)
			node = o->nodesetval->nodeTab[0];
	}
	if (n > 0) {
		m->present = true;
		if (n > 1) {
			snprintf(m->error, sizeof(m->error), "%d <policy> "
			    "elements, expected one", n);
		} else if (domxml_policy_attrs(&d, node, nvcpus, m) == 0) {
			xmlXPathFreeObject(o);
			domxml_close(&d);
			return 0;
		}
		/* Defaults until it is fixed, but remember why. */
		char why[sizeof(m->error)];
		memcpy(why, m->error, sizeof(why));
		domxml_policy_default(m);
		m->present = true;
		m->valid = false;
		memcpy(m->error, why, sizeof(why));
	}
	xmlXPathFreeObject(o);
	domxml_close(&d);
	return 0;
}

int
domxml_status(const char *xml, size_t len, pid_t *pid, pid_t *tids,
    unsigned int n, char *err, size_t errlen)
{
	struct domxml_doc	d;
	xmlXPathObjectPtr	o;
	uint64_t		id, v;
	int			i, cnt, found = 0, rc;

	*pid = 0;
	memset(tids, 0, n * sizeof(*tids));
	if (domxml_open(&d, xml, len, err, errlen) != 0)
		return -1;
	rc = domxml_uint(&d, NULL, "/domstatus/@pid", 1, MAX_PID, &v, err,
	    errlen);
	if (rc <= 0) {
		if (rc == 0)
			err_set(err, errlen, "no <domstatus pid>");
		domxml_close(&d);
		return -1;
	}
	*pid = (pid_t)v;
	o = domxml_eval(&d, NULL, "/domstatus/vcpus/vcpu");
	cnt = domxml_count(o);
	for (i = 0; i < cnt; i++) {
		xmlNodePtr node = o->nodesetval->nodeTab[i];

		if (domxml_uint(&d, node, "@id", 0, DOMXML_MAX_VCPUS - 1, &id,
		    err, errlen) <= 0 ||
		    domxml_uint(&d, node, "@pid", 1, MAX_PID, &v, err,
		    errlen) <= 0) {
			err_set(err, errlen, "malformed <vcpu> in status");
			xmlXPathFreeObject(o);
			domxml_close(&d);
			return -1;
		}
		if (id < n) {
			if (tids[id] == 0)
				found++;
			tids[id] = (pid_t)v;
		}
	}
	xmlXPathFreeObject(o);
	domxml_close(&d);
	return found;
}
