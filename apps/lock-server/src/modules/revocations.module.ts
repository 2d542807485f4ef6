import { Module } from '@nestjs/common';
import { RevocationsController } from '../http/revocations.controller';

/** Revocations: the audit log of grants taken from a holder, read by the reconciler (docs/audit.md). */
@Module({ controllers: [RevocationsController] })
export class RevocationsModule {}
