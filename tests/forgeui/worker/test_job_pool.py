"""procrastinate's queries in ``forge_worker`` each run alone, in autocommit: no BEGIN and
COMMIT round trips around a job's fetch and finish."""

from __future__ import annotations

import asyncio

import pytest
from django.test import override_settings
from psycopg.pq import TransactionStatus

from forgeui.worker.serve import job_pool


@pytest.mark.postgres
@pytest.mark.django_db(databases=["postgres"])
@override_settings(PROCRASTINATE_DATABASE_ALIAS="postgres")
def test_the_job_pools_connections_run_each_statement_as_its_own_transaction() -> None:
    async def states() -> tuple[bool, TransactionStatus]:
        pool = job_pool()
        await pool.open(wait=True, timeout=30)
        async with pool, pool.connection() as connection:
            await connection.execute("SELECT 1")
            return connection.autocommit, connection.info.transaction_status

    assert asyncio.run(states()) == (True, TransactionStatus.IDLE)
