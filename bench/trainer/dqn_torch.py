"""The comparison for bench/trainer: the RLoT navigator and its Double-DQN update in PyTorch.

Same network (7 -> 32, dueling heads 32-32-5 and 32-32-1, input (x - 1.5) / 1.5), same update
(online net selects, target net evaluates, MSE, Adam lr 0.01, batch 64, target copy every 50
updates), one thread. Prints JSON: updates per CPU second and greedy action latency.
"""
import argparse
import json
import time

import torch
import torch.nn as nn


class DuelingQNet(nn.Module):
    def __init__(self, state_dim=7, num_actions=5, hidden=32):
        super().__init__()
        self.trunk = nn.Linear(state_dim, hidden)
        self.adv_hidden = nn.Linear(hidden, hidden)
        self.adv_out = nn.Linear(hidden, num_actions)
        self.value_hidden = nn.Linear(hidden, hidden)
        self.value_out = nn.Linear(hidden, 1)

    def forward(self, x):
        x = (x - 1.5) / 1.5
        h = torch.relu(self.trunk(x))
        a = self.adv_out(torch.relu(self.adv_hidden(h)))
        v = self.value_out(torch.relu(self.value_hidden(h)))
        return v + a - a.mean(dim=1, keepdim=True)


def random_batch(gen, n=64):
    return (
        torch.randint(0, 4, (n, 7), generator=gen).float(),
        torch.randint(0, 5, (n,), generator=gen),
        torch.rand(n, generator=gen),
        torch.randint(0, 4, (n, 7), generator=gen).float(),
        (torch.rand(n, generator=gen) < 0.2).float(),
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=3.0)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    online, target = DuelingQNet(), DuelingQNet()
    target.load_state_dict(online.state_dict())
    opt = torch.optim.Adam(online.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(0)
    batches = [random_batch(gen) for _ in range(16)]
    gamma = 0.9

    def update(i):
        s, a, r, s2, d = batches[i % len(batches)]
        with torch.no_grad():
            best = online(s2).argmax(dim=1, keepdim=True)
            y = r + gamma * (1 - d) * target(s2).gather(1, best).squeeze(1)
        q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
        loss = ((q - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (i + 1) % 50 == 0:
            target.load_state_dict(online.state_dict())
        return loss.item()

    for i in range(200):
        update(i)
    n, c0, w0 = 0, time.process_time(), time.perf_counter()
    while time.process_time() - c0 < args.seconds:
        update(n)
        n += 1
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0

    states = [torch.randint(0, 4, (1, 7), generator=gen).float() for _ in range(64)]
    with torch.no_grad():
        for i in range(1000):
            online(states[i % 64]).argmax().item()
        m, a0 = 0, time.process_time()
        while time.process_time() - a0 < args.seconds / 2:
            online(states[m % 64]).argmax().item()
            m += 1
        act_cpu = time.process_time() - a0

    print(json.dumps({
        "torch_version": torch.__version__,
        "updates_per_cpu_s": n / cpu,
        "updates_per_wall_s": n / wall,
        "greedy_us": act_cpu / m * 1e6,
    }))


if __name__ == "__main__":
    main()
