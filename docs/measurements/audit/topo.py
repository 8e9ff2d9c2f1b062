"""Independent topology helpers from the spec's numbering (machines.md) - no fattorus imports."""
import numpy as np


class FatTree:
    def __init__(self, t):
        self.k = t['nodes_per_leaf']; self.L = t['leaves_per_pod']; self.P = t['pods']
        self.p = self.k * self.L
        self.n = self.p * self.P
        self.nleaves = self.L * self.P

    def leaf(self, nodes):
        return np.asarray(nodes) // self.k

    def pod(self, nodes):
        return np.asarray(nodes) // self.p

    def jtype(self, N):
        return 'T1' if N <= self.k else ('T2' if N <= self.p else 'T3')

    def hop_sum(self, nodes):
        nodes = np.asarray(nodes)
        n = len(nodes)
        cl = np.bincount(self.leaf(nodes)).astype(np.int64)
        cp = np.bincount(self.pod(nodes)).astype(np.int64)
        sl, sp = (cl ** 2).sum(), (cp ** 2).sum()
        return 2 * (sp - sl) + 4 * (n * n - sp)

    def hop_pair(self, a, b):  # brute-force definition, for spot checks
        if a // self.k == b // self.k:
            return 0
        if a // self.p == b // self.p:
            return 2
        return 4

    def aph(self, nodes):
        n = len(nodes)
        return 0.0 if n < 2 else self.hop_sum(nodes) / (n * (n - 1))


class Torus:
    def __init__(self, t):
        self.X, self.Y, self.Z = t['dims']; self.pr = t['nodes_per_router']
        self.n = self.X * self.Y * self.Z * self.pr

    def coords(self, nodes):
        r = np.asarray(nodes) // self.pr
        z = r % self.Z; y = (r // self.Z) % self.Y; x = r // (self.Y * self.Z)
        return x, y, z

    def aph(self, nodes):
        n = len(nodes)
        if n < 2:
            return 0.0
        x, y, z = self.coords(nodes)
        tot = 0
        for c, D in ((x, self.X), (y, self.Y), (z, self.Z)):
            # histogram over ring positions, then pairwise ring distance matrix (D x D)
            h = np.bincount(c, minlength=D).astype(np.int64)
            i = np.arange(D)
            d = np.abs(i[:, None] - i[None, :]); d = np.minimum(d, D - d)
            tot += int(h @ d @ h)
        return tot / (n * (n - 1))


class Dragonfly:
    def __init__(self, t):
        self.G = t['groups']; self.R = t['rows']; self.C = t['cols']; self.pr = t['nodes_per_router']
        self.bpr = t['bundles_per_router']
        self.rpg = self.R * self.C
        self.nr = self.G * self.rpg
        self.n = self.nr * self.pr
        G, S = self.G, self.rpg * self.bpr
        self.m = S // (G - 1)
        # gw[g][h][n] = local router in g holding bundle n toward h (round robin)
        self.gw = np.full((G, G, self.m), -1)
        for g in range(G):
            others = [h for h in range(G) if h != g]
            for s in range(S):
                nb, t_ = s // (G - 1), s % (G - 1)
                if nb < self.m:
                    self.gw[g, others[t_], nb] = s // self.bpr
        # router distance table
        rr = np.arange(self.nr)
        g = rr // self.rpg; loc = rr % self.rpg; row = loc // self.C; col = loc % self.C
        self.g, self.loc = g, loc
        Lloc = (row[:, None] != row[None, :]).astype(int) + (col[:, None] != col[None, :]).astype(int)
        self.Lin = Lloc[:self.rpg, :self.rpg]
        D = np.zeros((self.nr, self.nr), dtype=np.int64)
        for ga in range(G):
            for gb in range(G):
                A = slice(ga * self.rpg, (ga + 1) * self.rpg); B = slice(gb * self.rpg, (gb + 1) * self.rpg)
                if ga == gb:
                    D[A, B] = self.Lin
                else:
                    u = self.gw[ga, gb]; v = self.gw[gb, ga]
                    # 1 + min_n L(a, u_n) + L(v_n, b)
                    cand = self.Lin[:, u][:, None, :] + self.Lin[v, :].T[None, :, :]
                    D[A, B] = 1 + cand.min(axis=2)
        self.D = D

    def aph(self, nodes):
        n = len(nodes)
        if n < 2:
            return 0.0
        h = np.bincount(np.asarray(nodes) // self.pr, minlength=self.nr).astype(np.int64)
        idx = np.nonzero(h)[0]
        hh = h[idx]
        return float(hh @ self.D[np.ix_(idx, idx)] @ hh) / (n * (n - 1))


def make(t):
    return {'fattree': FatTree, 'torus3d': Torus, 'dragonfly': Dragonfly}[t['kind']](t)
