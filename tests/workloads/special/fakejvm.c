// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stand-in for a HotSpot JVM pcmon cannot read (test_java.py, docs/java.md): built twice,
 * as a libjvm.so that publishes gHotSpotVMStructs and the rest as HotSpot does, but without
 * the code cache's fields (a "JDK 99" that moved them), and (-DMAIN) as a program linked
 * against it that spins in spin() for SECONDS. pcmon must say once that it cannot read it,
 * and keep its native frames.
 */
#include <stddef.h>
#include <stdint.h>

#ifndef MAIN

struct field {
	const char *type, *field, *type_string;
	int32_t is_static;
	uint64_t offset;
	void *address;
};
struct type {
	const char *name, *super;
	int32_t is_oop, is_int, is_unsigned;
	uint64_t size;
};
struct iconst {
	const char *name;
	int32_t value;
};
struct lconst {
	const char *name;
	uint64_t value;
};

static int32_t vm_major_version = 99;

static struct field fields[] = {
	{ "Abstract_VM_Version", "_vm_major_version", "int", 1, 0, &vm_major_version },
	{ "Method", "_constMethod", "ConstMethod*", 0, 8, NULL },
	{ "CodeBlob", "_name", "const char*", 0, 8, NULL },
	{ "Klass", "_name", "Symbol*", 0, 16, NULL },
	{ NULL, NULL, NULL, 0, 0, NULL },
};
static struct type types[] = {
	{ "Method", NULL, 0, 0, 0, 88 },
	{ NULL, NULL, 0, 0, 0, 0 },
};
static struct iconst ints[] = { { "InvocationEntryBci", -1 }, { NULL, 0 } };
static struct lconst longs[] = { { NULL, 0 } };

void *gHotSpotVMStructs = fields;
void *gHotSpotVMTypes = types;
void *gHotSpotVMIntConstants = ints;
void *gHotSpotVMLongConstants = longs;
uint64_t gHotSpotVMStructEntryTypeNameOffset = offsetof(struct field, type);
uint64_t gHotSpotVMStructEntryFieldNameOffset = offsetof(struct field, field);
uint64_t gHotSpotVMStructEntryTypeStringOffset = offsetof(struct field, type_string);
uint64_t gHotSpotVMStructEntryIsStaticOffset = offsetof(struct field, is_static);
uint64_t gHotSpotVMStructEntryOffsetOffset = offsetof(struct field, offset);
uint64_t gHotSpotVMStructEntryAddressOffset = offsetof(struct field, address);
uint64_t gHotSpotVMStructEntryArrayStride = sizeof(struct field);
uint64_t gHotSpotVMTypeEntryTypeNameOffset = offsetof(struct type, name);
uint64_t gHotSpotVMTypeEntrySizeOffset = offsetof(struct type, size);
uint64_t gHotSpotVMTypeEntryArrayStride = sizeof(struct type);
uint64_t gHotSpotVMIntConstantEntryNameOffset = offsetof(struct iconst, name);
uint64_t gHotSpotVMIntConstantEntryValueOffset = offsetof(struct iconst, value);
uint64_t gHotSpotVMIntConstantEntryArrayStride = sizeof(struct iconst);
uint64_t gHotSpotVMLongConstantEntryNameOffset = offsetof(struct lconst, name);
uint64_t gHotSpotVMLongConstantEntryValueOffset = offsetof(struct lconst, value);
uint64_t gHotSpotVMLongConstantEntryArrayStride = sizeof(struct lconst);

/* what the program calls, so that it needs the library */
int fakejvm_version(void)
{
	return vm_major_version;
}

#else

#include "../workload.h"

int fakejvm_version(void);

NOINLINE static uint64_t spin(double secs)
{
	uint64_t end = wall_ns() + (uint64_t)(secs * 1e9), x = 0;

	while (wall_ns() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + i;
	return x;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);

	printf("{\"version\": %d, \"x\": %llu}\n", fakejvm_version(), (unsigned long long)spin(secs) & 0xff);
	return 0;
}

#endif
