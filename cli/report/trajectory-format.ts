/**
 * A trajectory for people: as terminal text (`longhaul show`) and as an HTML page (linked from the
 * report). Both pure, over the same TrajectoryView, and say the same things: each turn's text, its
 * tool calls with inputs and observations, the versions that generated it, the reward.
 */
import type { TrajectoryBehaviour } from '../../activities/analysis/behaviour.js';
import type { ToolCallView, TrajectoryView } from '../../activities/analysis/trajectory-view.js';
import { escapeHtml } from './report-html.js';

const inputText = (input: unknown) => (typeof input === 'string' ? input : JSON.stringify(input));
const versions = (list: readonly number[]) => list.map((version) => `v${version}`).join(', ') || '–';
const parts = (record: Readonly<Record<string, number>>) =>
  Object.entries(record)
    .map(([name, value]) => `${name} ${value.toFixed(3)}`)
    .join(' · ');

function indent(text: string, prefix: string): string {
  return text
    .split('\n')
    .map((line) => `${prefix}${line}`)
    .join('\n');
}

function callLine(call: ToolCallView): string {
  const flags = [
    call.ok ? 'ok' : call.invalid ? 'invalid' : 'failed',
    `${Math.round(call.latencyMs)} ms`,
    ...(call.cacheHit ? ['cached'] : []),
  ];
  const documents = call.documentIds.length ? ` · documents ${call.documentIds.join(', ')}` : '';
  return `${call.tool}(${inputText(call.input)}) — ${flags.join(', ')}${documents}`;
}

function behaviourLines(behaviour: TrajectoryBehaviour): string[] {
  return [
    `tool calls ${behaviour.toolCalls} (searches ${behaviour.searches}) · distinct documents ${behaviour.distinctDocuments}`,
    `answer verified by a further search: ${behaviour.verifiedBySearch === null ? 'no answer' : behaviour.verifiedBySearch ? 'yes' : behaviour.answerFirstSeenTurn === null ? 'no (never seen before the answer)' : `no (first seen in turn ${behaviour.answerFirstSeenTurn})`}`,
    `uncertainty: ${behaviour.uncertainty.join(', ') || 'none'} · conflicting evidence: ${behaviour.conflict.join(', ') || 'none'}`,
  ];
}

/** Terminal text; `observationChars` clips each observation (0: no clipping). */
export function formatTrajectory(
  view: TrajectoryView,
  behaviour: TrajectoryBehaviour,
  options: { observationChars?: number } = {},
): string {
  const clip = options.observationChars ?? 0;
  const lines = [
    `trajectory ${view.trajectoryId}`,
    `question   ${view.question}`,
    `gold       ${view.goldAnswers.join(' | ') || '–'}`,
    `answer     ${view.answer ?? '(none)'}`,
    `reward     ${view.reward.toFixed(3)} (${view.rewardMetric}; ${parts(view.rewardParts) || 'no parts'}) · stop: ${view.stopReason}`,
    `run        ${view.runId || '–'} · dataset ${view.dataset || '–'} · question id ${view.questionId || '–'}`,
    `versions   ${versions(view.versionsUsed)} · ${view.turns.length} turns · ${view.generatedTokens} generated tokens`,
    ...behaviourLines(behaviour),
  ];
  for (const turn of view.turns) {
    lines.push(
      '',
      `── turn ${turn.turn} · asked v${turn.policyVersion} · tokens from ${versions(turn.tokenVersions)} · ${turn.generatedTokens} tokens${turn.interruptions ? ` · interrupted ${turn.interruptions}×` : ''} · ${turn.action}`,
    );
    lines.push(indent(turn.text, '  │ '));
    if (turn.invalidReason) lines.push(`  ✗ invalid: ${turn.invalidReason}`);
    for (const call of turn.toolCalls) {
      lines.push(`  → ${callLine(call)}`);
      if (call.observation === null) lines.push('    (observation not stored)');
      else {
        const text =
          clip > 0 && call.observation.length > clip
            ? `${call.observation.slice(0, clip)}… (${call.observation.length} characters)`
            : call.observation;
        lines.push(indent(text, '    ‹ '));
      }
    }
  }
  return lines.join('\n');
}

/** One self-contained HTML page (no script). */
export function renderTrajectoryPage(view: TrajectoryView, behaviour: TrajectoryBehaviour, options: { reportLink?: string } = {}): string {
  const turns = view.turns
    .map(
      (turn) => `<section class="turn">
<h3>Turn ${turn.turn} <span class="muted">asked v${turn.policyVersion} · tokens from ${escapeHtml(versions(turn.tokenVersions))} · ${turn.generatedTokens} tokens${turn.interruptions ? ` · interrupted ${turn.interruptions}×` : ''} · ${turn.action}</span></h3>
<pre class="text">${escapeHtml(turn.text)}</pre>
${turn.invalidReason ? `<p class="invalid">invalid: ${escapeHtml(turn.invalidReason)}</p>` : ''}
${turn.toolCalls
  .map(
    (call) => `<div class="call"><div class="call-head">${escapeHtml(callLine(call))}</div>
<pre class="observation">${call.observation === null ? '(observation not stored)' : escapeHtml(call.observation)}</pre></div>`,
  )
  .join('\n')}
</section>`,
    )
    .join('\n');
  const facts: [string, string][] = [
    ['question', view.question],
    ['gold answers', view.goldAnswers.join(' | ') || '–'],
    ['answer', view.answer ?? '(none)'],
    ['reward', `${view.reward.toFixed(3)} (${view.rewardMetric}; ${parts(view.rewardParts) || 'no parts'})`],
    ['stop reason', view.stopReason],
    ['run', view.runId || '–'],
    ['dataset', view.dataset || '–'],
    ['question id', view.questionId || '–'],
    ['policy versions', versions(view.versionsUsed)],
    ['behaviour', behaviourLines(behaviour).join('\n')],
  ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Trajectory ${escapeHtml(view.trajectoryId)}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d2330; max-width: 1000px; }
h1 { font-size: 20px; } h3 { font-size: 15px; margin: 18px 0 6px; } .muted { color: #667085; font-weight: normal; }
th { text-align: left; padding-right: 12px; vertical-align: top; } td { white-space: pre-wrap; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0; padding: 8px; border-radius: 4px; }
.text { background: #f2f4f7; } .observation { background: #fff8e6; font-size: 12px; } .call-head { font-family: monospace; font-size: 12px; margin-top: 6px; }
.invalid { color: #b42318; }
</style>
</head>
<body>
${options.reportLink ? `<p><a href="${escapeHtml(options.reportLink)}">← report</a></p>` : ''}
<h1>Trajectory <code>${escapeHtml(view.trajectoryId)}</code></h1>
<table>${facts.map(([label, value]) => `<tr><th>${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`).join('')}</table>
${turns}
</body>
</html>
`;
}

/** A file name for a trajectory's page. */
export function trajectoryPageName(trajectoryId: string): string {
  return `${trajectoryId.replace(/[^A-Za-z0-9._-]/g, '_')}.html`;
}
