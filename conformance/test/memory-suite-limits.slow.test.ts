/** The in-memory run against an agent whose card allows 8 tasks at once (memory-suite.testkit.ts). */
import { describeLimitedAgent } from './memory-suite.testkit.ts';

describeLimitedAgent();
