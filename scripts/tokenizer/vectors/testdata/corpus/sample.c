/* C sample: preprocessor, pointers, bit twiddling. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ARRAY_LEN(x) (sizeof(x) / sizeof((x)[0]))

typedef struct node {
	struct node *next;
	uint32_t key;
	char value[32];
} node_t;

static uint32_t hash32(const char *s)
{
	uint32_t h = 2166136261u;
	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 16777619u;
	}
	return h;
}

int popcount(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	return (int)((((x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL) * 0x0101010101010101ULL) >> 56);
}

int main(int argc, char **argv)
{
	node_t *head = NULL;
	for (int i = 1; i < argc; ++i) {
		node_t *n = calloc(1, sizeof *n);
		if (!n) { perror("calloc"); return EXIT_FAILURE; }
		n->key = hash32(argv[i]);
		strncpy(n->value, argv[i], sizeof n->value - 1);
		n->next = head;
		head = n;
	}
	for (node_t *n = head; n != NULL; n = n->next)
		printf("%08x\t%s\t%d\n", n->key, n->value, popcount(n->key));
	printf("max=%d len=%zu\n", MAX(3, 7), ARRAY_LEN("abc"));
	return 0;
}
