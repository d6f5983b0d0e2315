/* UTF-8 as RFC 3629 has it. */
#ifndef PREFCPU_UTF8_H
#define PREFCPU_UTF8_H

#include <stddef.h>

/*
 * Length of the valid multi-byte UTF-8 sequence at s (at most n bytes), or
 * 0 (also for ASCII): overlong forms, surrogates and code points above
 * U+10FFFF are invalid, as RFC 3629 says.
 */
size_t	utf8_len(const unsigned char *s, size_t n);
/*
 * The code point of a valid sequence of len bytes at s (utf8_len()'s), if
 * it is one a reader must see escaped: a bidi control (U+061C, U+200E,
 * U+200F, U+202A..U+202E, U+2066..U+2069), which reorders the text around
 * it, or a line or paragraph separator (U+2028, U+2029); else 0.
 */
unsigned int utf8_invisible(const unsigned char *s, size_t len);
/*
 * The length of text[len] without a multi-byte character cut short at its
 * end (what snprintf leaves when it truncates); len when there is none.
 */
size_t	utf8_cut(const char *text, size_t len);

#endif
