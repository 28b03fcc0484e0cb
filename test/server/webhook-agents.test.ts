import { describe, expect, it } from 'vitest';
import { ReceiverAgents } from '../../src/webhooks/agents.js';

// ready() is the attempt's way around the vetting promise (D-148): it must answer only what get() would answer at once.
describe('ReceiverAgents.ready', () => {
  const url = new URL('http://receiver.test:8080/hooks');
  const setup = () => {
    let t = 0;
    let vets = 0;
    const agents = new ReceiverAgents(
      async () => {
        vets += 1;
        return [{ address: '127.0.0.1', family: 4 }];
      },
      () => t,
      { revetMs: 1000, idleMs: 60_000 },
    );
    return { agents, advance: (ms: number) => (t += ms), vets: () => vets };
  };

  it('answers nothing before the receiver is vetted, then the vetted agent without vetting again', async () => {
    const { agents, vets } = setup();
    expect(agents.ready(1, url, 5)).toBeNull();
    const agent = await agents.get(1, url, 5);
    expect(agents.ready(1, url, 5)).toBe(agent);
    expect(vets()).toBe(1);
    await agents.close();
  });

  it('answers nothing once the vetting is stale, the configuration changed, or for another client or origin', async () => {
    const { agents, advance } = setup();
    await agents.get(1, url, 5);
    expect(agents.ready(1, url, 6)).toBeNull();
    expect(agents.ready(2, url, 5)).toBeNull();
    expect(agents.ready(1, new URL('http://receiver.test:9090/hooks'), 5)).toBeNull();
    advance(999);
    expect(agents.ready(1, url, 5)).not.toBeNull();
    advance(1);
    expect(agents.ready(1, url, 5)).toBeNull();
    await agents.close();
  });

  it('answers nothing after a failed request dropped the agent', async () => {
    const { agents } = setup();
    const agent = await agents.get(1, url, 5);
    agents.drop(1, url, agent);
    expect(agents.ready(1, url, 5)).toBeNull();
    await agents.close();
  });
});
