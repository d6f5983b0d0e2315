/*
 * Text tables for prefcpuctl, sized to the terminal: columns as wide as
 * their widest cell, and while the line would be wider than the terminal,
 * one step of the column of lowest rank that can still give: a column
 * with a minimum is cut (with an ellipsis) down to it, an optional one is
 * dropped.  Space a drop freed beyond the need goes back to the cut
 * columns, highest rank first.  Cells are text already escaped for a terminal
 * (str_escape): valid UTF-8, no control bytes.
 */
#ifndef PREFCPU_CTL_TABLE_H
#define PREFCPU_CTL_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define TAB_RIGHT	0x1	/* numbers: right-aligned */
#define TAB_OPTIONAL	0x2	/* dropped before the line overflows */

struct tab_col {
	const char	*name;
	int		 flags;
	unsigned int	 min;	/* cut down to this; 0 never cut */
	unsigned int	 rank;	/* order of the steps: lowest first */
};

struct tab;

struct tab	*tab_new(const struct tab_col *, size_t ncols);
void		 tab_free(struct tab *);
/* Start a row; then one tab_cell per column, in order. */
void		 tab_row(struct tab *);
void		 tab_cell(struct tab *, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));
/* Print header and rows in width columns (0: no limit). */
void		 tab_print(const struct tab *, FILE *, unsigned int width);

/* Columns of the terminal: COLUMNS, else the tty's, else 0 (no limit). */
unsigned int	 tab_term_width(int fd);
/* Rows of the terminal, 0 if unknown. */
unsigned int	 tab_term_height(int fd);
/* Display columns of a UTF-8 string. */
unsigned int	 tab_width(const char *);
/* Print s cut to width display columns (ellipsis if cut), then newline. */
void		 tab_line(FILE *, const char *s, unsigned int width);

#endif
