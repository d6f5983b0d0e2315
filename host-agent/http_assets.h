/*
 * The dashboard's files (web/), compiled into the daemon by web/embed.py
 * so that it serves them with no install path and no internet.
 */
#ifndef PREFCPU_HTTP_ASSETS_H
#define PREFCPU_HTTP_ASSETS_H

#include <stddef.h>

struct http_asset {
	const char		*name;	/* "index.html" */
	const char		*type;	/* Content-Type */
	const unsigned char	*data;
	size_t			 len;
};

extern const struct http_asset http_assets[];
extern const size_t http_nassets;

#endif
