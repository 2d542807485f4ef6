/** What a caller asks the rail to transfer: the shape POST /submit's body is validated into. */
export interface TransferRequest {
  readonly clientRef: string;
  readonly amountMinor: number;
  readonly currency: string;
}
