// SPDX-License-Identifier: GPL-2.0-only
/* pcmon targets, status: what pcmond holds and how it is doing. */
#include "cli.h"
#include "format.h"
#include "session.h"

int cmd_targets(struct cli *c)
{
	return cli_ask(c, fmt_targets);
}

int cmd_status(struct cli *c)
{
	return cli_ask(c, fmt_status);
}
