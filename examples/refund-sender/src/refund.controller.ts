import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { RefundSender, type SendResult } from './refund-sender.service';

@Controller('refunds')
export class RefundController {
  constructor(private readonly sender: RefundSender) {}

  /**
   * Sends refund `id` at most once. A refused grant (another worker holds it,
   * the lock-server is down, the policy forbids the key) leaves as a DlockError
   * and DlockExceptionFilter answers it: 429, 503, 403 … with the contract envelope.
   */
  @Post(':id/send')
  @HttpCode(200)
  async send(@Param('id') id: string): Promise<{ id: string; result: SendResult }> {
    return { id, result: await this.sender.send(id) };
  }
}
