import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { DlockError } from '@dlock/lock-api';
import { RefundSender, type SendResult } from './refund-sender.service';

@Controller('refunds')
export class RefundController {
  constructor(private readonly sender: RefundSender) {}

  /**
   * Sends refund `id` at most once. A refused grant (another worker holds it,
   * the lock-server is down, the policy forbids the key) leaves as a DlockError
   * and DlockExceptionFilter answers it: 429, 503, 403 … with the contract envelope.
   * A refund an earlier grant left half-sent is the example's own code,
   * 409 REFUND_NEEDS_CHECK (src/refund-errors.ts), in the same envelope.
   */
  @Post(':id/send')
  @HttpCode(200)
  async send(
    @Param('id') id: string,
  ): Promise<{ id: string; result: Exclude<SendResult, 'needs-check'> }> {
    const result = await this.sender.send(id);
    if (result === 'needs-check') {
      throw new DlockError(
        'REFUND_NEEDS_CHECK',
        'an earlier grant was sending this refund: check the payment network before sending again',
        { details: { refundId: id } },
      );
    }
    return { id, result };
  }
}
