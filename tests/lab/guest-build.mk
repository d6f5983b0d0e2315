# The lab's build benchmark (tests/lab/guest-bench build): make -j of a
# small C project in the guest, kernbench's pattern at the size a TCG
# guest builds in seconds: prefcpu's common and protocol libraries (5 C
# files, about 2800 lines) compiled with gcc-12 -O2 and archived.  (The
# whole of prefcpu-guestd took 110 s a build in a TCG guest.)  lab.py packs
# this file as /lab/src/Makefile next to common/ and proto/.
CC = gcc-12
CFLAGS = -O2 -std=gnu11 -Wall -D_GNU_SOURCE -DPREFCPU_VERSION=\"lab\" \
	-Icommon -Iproto
SRC = $(filter-out common/conf.c,$(wildcard common/*.c proto/*.c))
OBJ = $(SRC:.c=.o)

libprefcpu.a: $(OBJ)
	ar rcs $@ $(OBJ)

clean:
	rm -f $(OBJ) libprefcpu.a

.PHONY: clean
