/** The in-memory run of memory-suite.test.ts with one more seed, for the random choices of the property and chaos cases. */
import { describeMemorySuite } from './memory-suite.testkit.ts';

describeMemorySuite([987654321]);
