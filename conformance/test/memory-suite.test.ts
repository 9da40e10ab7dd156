/** Every case the in-memory reference agent can be held to, with the seed certification uses (memory-suite.testkit.ts). */
import { DEFAULT_SEED } from '../options.ts';
import { describeMemorySuite } from './memory-suite.testkit.ts';

describeMemorySuite([DEFAULT_SEED]);
