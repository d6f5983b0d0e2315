/*
 * UTF-8 as RFC 3629 has it, for the escaping in log.c, the JSON writers
 * and err_set(): no dependencies, so log.c and util.c both use it.
 */
#include <stddef.h>
#include <stdint.h>

#include "utf8.h"

size_t
utf8_len(const unsigned char *s, size_t n)
{
	size_t		len, i;
	uint32_t	cp;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	cp = s[0] & (0x7f >> len);
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

unsigned int
utf8_invisible(const unsigned char *s, size_t len)
{
	unsigned int	cp;

	if (len == 2)
		cp = (s[0] & 0x1fu) << 6 | (s[1] & 0x3fu);
	else if (len == 3)
		cp = (s[0] & 0x0fu) << 12 | (s[1] & 0x3fu) << 6 | (s[2] & 0x3fu);
	else
		return 0;
	if (cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	    (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return cp;
	return 0;
}

size_t
utf8_cut(const char *text, size_t len)
{
	const unsigned char	*s = (const unsigned char *)text;
	size_t			 i = len, need;

	while (i > 0 && len - i < 4 && (s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0 || s[i - 1] < 0xc2 || s[i - 1] > 0xf4)
		return len;
	i--;
	need = s[i] <= 0xdf ? 2 : s[i] <= 0xef ? 3 : 4;
	return len - i < need ? i : len;
}
