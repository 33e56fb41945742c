import torch
x=torch.randn(3,4,dtype=torch.complex64,device="cuda"); s=torch.randn(2,4,dtype=torch.complex64,device="cuda")
idx=torch.tensor([[0,1,2,0],[2,0,1,1]],device="cuda")
calls={"scatter":lambda: x.scatter(0,idx,s),"scatter_value":lambda: x.scatter(1,torch.tensor([[3],[0]],device="cuda"),1),
"scatter_add":lambda: x.scatter_add(0,idx,s),"scatter_":lambda: x.clone().scatter_(0,idx[:1],s),"scatter_add_":lambda: x.scatter_add_(0,idx,s)}
for r in ("sum","prod","amax","amin","mean"):
  for inc in (True,False):
    calls[f"reduce_{r}_{inc}"]=lambda r=r,inc=inc: x.scatter_reduce(0,idx,s,r,include_self=inc)
for kw in ("add","multiply"):
  calls[f"scatter_reduce_kw_{kw}"]=lambda kw=kw: x.scatter(0,idx,s,reduce=kw)
for n,f in calls.items():
  try: f(); torch.cuda.synchronize(); print(n,"ok")
  except Exception as e: print(n,type(e).__name__,str(e)[:100])
