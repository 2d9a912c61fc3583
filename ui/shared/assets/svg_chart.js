// The SVG charts' hover, clicks, box selection and download (ui/shared/svg_chart.py mounts it).
export default function(component){const {data,setStateValue,parentElement}=component;
const image=data.config.toImageButtonOptions;
let host=parentElement.querySelector('div.lc');if(!host){host=document.createElement('div');host.className='lc';
parentElement.appendChild(host);}
host.innerHTML=data.svg+'<div class="lc-tip"></div><button class="lc-save" type="button"></button>';
const svg=host.querySelector('svg'),tip=host.querySelector('.lc-tip'),save=host.querySelector('.lc-save');
tip.style.fontSize=data.tip+'px';save.textContent='\u2913 '+image.format.toUpperCase();
save.title='Download this chart as '+image.format.toUpperCase();
const at=e=>{const r=svg.getBoundingClientRect(),s=r.width/data.width;return [(e.clientX-r.left)/s,(e.clientY-r.top)/s];};
const inside=(a,x,y)=>x>=a.box[0]&&x<=a.box[2]&&y>=a.box[1]&&y<=a.box[3];
const value=(a,x,y)=>[a.x[0]+(x-a.box[0])/(a.box[2]-a.box[0])*(a.x[1]-a.x[0]),
 a.y[0]+(y-a.box[1])/(a.box[3]-a.box[1])*(a.y[1]-a.y[0])];
const minus=s=>s.replace('-','\u2212');
function cellText(cells,r,c){if(cells.text){const row=cells.text[r];return row?row[c]:null;}
 if(r<0||r>=cells.ys.length||c<0||c>=cells.xs.length)return null;
 return cells.template.replace(/%\{(x|y|z)(?::(\+?)\.(\d+)f)?\}/g,(m,f,plus,d)=>{
  if(f!=='z')return minus(String(f==='x'?cells.xs[c]:cells.ys[r]));const v=cells.z[r][c];if(v===null)return 'NaN';
  return minus((plus&&v>=0?'+':'')+v.toFixed(+d));});}
function hit(x,y){const a=data.areas.find(a=>inside(a,x,y));if(!a)return null;let best=null,d=a.reach;
 for(const m of a.marks){const e=Math.hypot(m[0]-x,m[1]-y);if(e<=d){d=e;best=m;}}
 if(best)return {text:best[2],point:best[3],area:a};
 if(a.cells){const [vx,vy]=value(a,x,y),r=Math.round(vy-a.cells.y0),c=Math.round(vx-a.cells.x0),t=cellText(a.cells,r,c);
  if(t!=null)return {text:t,area:a};}
 return {text:null,area:a};}
svg.addEventListener('mousemove',e=>{const [x,y]=at(e),h=hit(x,y);
 if(!h||!h.text){tip.style.display='none';return;}
 tip.textContent=h.text;tip.style.display='block';const r=host.getBoundingClientRect();
 let left=e.clientX-r.left+14;if(left+tip.offsetWidth>r.width)left=Math.max(0,e.clientX-r.left-tip.offsetWidth-14);
 tip.style.left=left+'px';tip.style.top=(e.clientY-r.top+14)+'px';});
svg.addEventListener('mouseleave',()=>{tip.style.display='none';});
const pick=(indices,box)=>setStateValue('selection',{points:indices.map(i=>data.points[i]),
 point_indices:indices.map(i=>data.points[i].point_index),box:box?[box]:[],lasso:[]});
if(data.modes.length){let start=null,rect=null;svg.style.cursor=data.modes.includes('box')?'crosshair':'pointer';
 svg.addEventListener('mousedown',e=>{start=at(e);e.preventDefault();});
 svg.addEventListener('mousemove',e=>{if(!start||!data.modes.includes('box'))return;const [x,y]=at(e);
  if(!rect){rect=document.createElementNS('http://www.w3.org/2000/svg','rect');rect.setAttribute('class','lc-box');
   svg.appendChild(rect);}
  rect.setAttribute('x',Math.min(x,start[0]));rect.setAttribute('y',Math.min(y,start[1]));
  rect.setAttribute('width',Math.abs(x-start[0]));rect.setAttribute('height',Math.abs(y-start[1]));});
 svg.addEventListener('mouseup',e=>{const s=start,[x,y]=at(e);start=null;if(rect){rect.remove();rect=null;}if(!s)return;
  if(Math.hypot(x-s[0],y-s[1])<6){const h=hit(x,y);if(h&&h.point!=null&&data.modes.includes('points'))pick([h.point]);
   return;}
  const a=data.areas.find(a=>inside(a,s[0],s[1]));if(!a||!data.modes.includes('box'))return;
  const [x0,x1]=[Math.min(x,s[0]),Math.max(x,s[0])],[y0,y1]=[Math.min(y,s[1]),Math.max(y,s[1])];
  const [v0,w0]=value(a,x0,y0),[v1,w1]=value(a,x1,y1);
  pick(a.marks.filter(m=>m[0]>=x0&&m[0]<=x1&&m[1]>=y0&&m[1]<=y1).map(m=>m[3]),
   {xref:a.xref,yref:a.yref,x:[v0,v1],y:[w0,w1]});});}
save.addEventListener('click',()=>{const text=new XMLSerializer().serializeToString(svg),name=image.filename+'.'+image.format;
 const send=blob=>{const a=document.createElement('a');a.href=URL.createObjectURL(blob);a.download=name;
  document.body.appendChild(a);a.click();a.remove();setTimeout(()=>URL.revokeObjectURL(a.href),1000);};
 if(image.format==='svg'){send(new Blob([text],{type:'image/svg+xml'}));return;}
 const img=new Image();img.onload=()=>{const c=document.createElement('canvas');c.width=data.width*2;
  c.height=data.height*2;const g=c.getContext('2d');g.scale(2,2);g.drawImage(img,0,0,data.width,data.height);
  c.toBlob(send,'image/png');};
 img.src='data:image/svg+xml;charset=utf-8,'+encodeURIComponent(text);});}
