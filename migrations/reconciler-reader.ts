import type { QueryRunner } from 'typeorm';

/**
 * The reconciler's read-only role (docs/operations.md, "The reconciler's read-only role";
 * docs/audit.md): it reads paydb, proxydb and lockdb and must never be able to write to them.
 * The migration makes the role and its grants and holds no password: the role is made
 * NOLOGIN, and each environment lets it log in its own way (npm start: the supervisor after
 * migrating; compose and the local k8s overlay: the database's first-boot script; Cloud SQL:
 * terraform's user and its password in Secret Manager). Where it already exists (made by
 * that environment, or by the migration of another database of the same server) only the
 * grants are added. Making it needs CREATEROLE; a migrator without it gets a message saying
 * what to create.
 */
export const READER_ROLE = 'reconciler_ro';

export async function grantReader(q: QueryRunner): Promise<void> {
  await q.query(`
    DO $$
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${READER_ROLE}') THEN
        BEGIN
          CREATE ROLE ${READER_ROLE} NOLOGIN;
        EXCEPTION
          -- Made at the same moment by another database's migration on this server.
          WHEN duplicate_object OR unique_violation THEN NULL;
          WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'role ${READER_ROLE} does not exist and % may not create it', current_user
              USING HINT = 'create it first (docs/operations.md, "The reconciler''s read-only role")';
        END;
      END IF;
      EXECUTE format('GRANT CONNECT ON DATABASE %I TO ${READER_ROLE}', current_database());
    END $$`);
  await q.query(`GRANT USAGE ON SCHEMA public TO ${READER_ROLE}`);
  await q.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${READER_ROLE}`);
  await q.query(`GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO ${READER_ROLE}`);
  // Tables later migrations create (as this same migrating role) are readable too.
  await q.query(
    `ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO ${READER_ROLE}`,
  );
  await q.query(
    `ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON SEQUENCES TO ${READER_ROLE}`,
  );
}

/** Takes this database's grants back; the role itself is the server's, other databases use it. */
export async function revokeReader(q: QueryRunner): Promise<void> {
  await q.query(
    `ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE SELECT ON SEQUENCES FROM ${READER_ROLE}`,
  );
  await q.query(
    `ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE SELECT ON TABLES FROM ${READER_ROLE}`,
  );
  await q.query(`REVOKE SELECT ON ALL SEQUENCES IN SCHEMA public FROM ${READER_ROLE}`);
  await q.query(`REVOKE SELECT ON ALL TABLES IN SCHEMA public FROM ${READER_ROLE}`);
  await q.query(`REVOKE USAGE ON SCHEMA public FROM ${READER_ROLE}`);
  await q.query(`
    DO $$ BEGIN
      EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM ${READER_ROLE}', current_database());
    END $$`);
}
