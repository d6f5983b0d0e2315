# The lab's build benchmark (tests/lab/guest-bench build): prefcpu-guestd
# from its sources, with the compiler and flags of a release build, in the
# guest.  lab.py packs this file as /lab/src/Makefile next to common/,
# proto/ and guest-agent/.
CC = gcc-12
CFLAGS = -O2 -g -std=gnu11 -Wall -D_GNU_SOURCE -DPREFCPU_VERSION=\"lab\" \
	-DGUESTD_RUN_DIR=\"/run/prefcpu\" -Icommon -Iproto -Iguest-agent
SRC = $(filter-out common/conf.c,$(wildcard common/*.c proto/*.c guest-agent/*.c))
OBJ = $(SRC:.c=.o)

prefcpu-guestd: $(OBJ)
	$(CC) -o $@ $(OBJ) -ljson-c -lm

clean:
	rm -f $(OBJ) prefcpu-guestd

.PHONY: clean
