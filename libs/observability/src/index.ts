export * from './health';
export * from './observability.module';
// One implementation, published in @dlock/lock-nest so that a team's own service records its
// safety events the same way (docs/extending.md, "Your own error codes and safety events").
export {
  registerSafetyEvents,
  SafetyEvents,
  SafetyEventFeed,
  SAFETY_EVENT_COALESCE_WINDOW_MS,
  SAFETY_EVENT_FEED_CAPACITY_EVENTS,
  type BuiltInSafetyEvent,
  type FencedResource,
  type SafetyEventLogStyle,
  type SafetyEventPage,
  type SafetyEventRecord,
  type SafetyEventSpec,
} from '@dlock/lock-nest';
export * from './safety-events.controller';
export * from './safety-events.client';
export * from './signing-key-log';
export * from './fence-point-audit';
