// Every workflow the agent worker registers. The bundle is built from this file.
export { skeletonTrajectory, payloadRoundTrip } from './skeleton.workflow.js';
export { trajectory } from './trajectory.workflow.js';
export { learner } from './learner.workflow.js';
export { warmStart } from './warm-start.workflow.js';
export { evaluation } from './evaluation.workflow.js';
export { synthesizeQuestion, synthesisRun } from './synthesis.workflow.js';
export { scheduledEvaluation, scheduledBenchmark } from './schedules.workflow.js';
