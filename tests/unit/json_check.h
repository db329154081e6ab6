/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A reply's fields for a cmocka test: the number or string @k of @o, or the test fails naming
 * the field. Include after <cmocka.h> and <cJSON.h>.
 */
#ifndef PCMON_TEST_JSON_CHECK_H
#define PCMON_TEST_JSON_CHECK_H

static inline double num(const cJSON *o, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(x))
		fail_msg("no number \"%s\"", k);
	return x->valuedouble;
}

static inline const char *str(const cJSON *o, const char *k)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsString(x))
		fail_msg("no string \"%s\"", k);
	return x->valuestring;
}

#endif
